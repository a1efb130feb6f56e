"""Refusals raise AirlockError with the gateway's status, code, message and details."""

from __future__ import annotations

import pickle

import pytest
from _gateway import Gateway, free_port
from _refusals import refused

from airlock_client import Airlock, AirlockError, AsyncAirlock


def test_an_unknown_session_raises_session_not_found(airlock: Airlock) -> None:
    with refused(404, "session-not-found") as raised:
        airlock.get_session("no-such-session")
    assert raised.value.message and raised.value.details == {}
    with refused(404, "session-not-found"):
        airlock.send("no-such-session", "hello")


def test_events_of_an_unknown_session_raise_session_not_found(airlock: Airlock) -> None:
    with refused(404, "session-not-found"), airlock.events("no-such-session") as events:
        next(events)


@pytest.mark.anyio
async def test_async_errors_carry_the_code(gateway: Gateway) -> None:
    async with AsyncAirlock(gateway.url) as airlock:
        with refused(404, "session-not-found"):
            await airlock.get_session("no-such-session")
        with refused(404, "session-not-found"):
            async with airlock.events("no-such-session") as events:
                await events.__anext__()


def test_an_error_survives_pickling(airlock: Airlock) -> None:
    with pytest.raises(AirlockError) as raised:
        airlock.get_session("no-such-session")
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (copy.status, copy.code, copy.message) == (
        404,
        "session-not-found",
        raised.value.message,
    )


def test_empty_content_is_a_bad_request_naming_the_field(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    with refused(400, "bad-request") as raised:
        airlock.send(s, "")
    assert raised.value.details["field"] == "content"


def test_input_to_a_disposed_session_raises_session_disposed(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    airlock.dispose_session(s)
    airlock.dispose_session(s)
    assert airlock.get_session(s).disposed
    with refused(409, "session-disposed"):
        airlock.send(s, "hello")


def test_a_gateway_that_is_not_there_raises_connection_error() -> None:
    with Airlock(f"http://127.0.0.1:{free_port()}") as airlock:
        with refused(None, "connection-error"):
            airlock.get_session("s")
        with refused(None, "connection-error"), airlock.events("s") as events:
            next(events)


def test_a_gateway_with_keys_needs_the_api_key(tmp_path) -> None:
    gateway = Gateway(tmp_path)
    key = gateway.keys_create("team-a")
    gateway.start()
    try:
        with Airlock(gateway.url) as anonymous, refused(401, "unauthorized"):
            anonymous.list_sessions()
        with Airlock(gateway.url, api_key=key) as airlock:
            result = airlock.run("hello")
            assert result.finish_reason == "completed"
            assert [s.session_id for s in airlock.list_sessions().items] == [result.session_id]
    finally:
        gateway.kill()
