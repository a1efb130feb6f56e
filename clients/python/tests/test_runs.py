"""Owned runs: `run()` sends a message and returns the RunResult once the agent is idle."""

from __future__ import annotations

import pytest
from _gateway import Gateway
from _refusals import refused
from _streams import HELD

from airlock_client import Airlock, AsyncAirlock, RunResult

DEMO_HELLO = 'You said: "hello"'


def assert_hello_result(result: RunResult) -> None:
    assert isinstance(result, RunResult)
    assert result.final_response.startswith(DEMO_HELLO)
    assert result.finish_reason == "completed"
    assert result.usage is not None and result.usage.output_tokens > 0
    assert (result.first_seq, result.last_seq) == (0, len(result.events) - 1)
    assert [e.seq for e in result.events] == list(range(result.first_seq, result.last_seq + 1))
    assert result.events[-1].type == "turn/end"


def test_run_returns_the_run_result_in_a_new_session(gateway: Gateway) -> None:
    assert_hello_result(Airlock(gateway.url).run("hello"))


@pytest.mark.anyio
async def test_async_run_returns_the_run_result_in_a_new_session(gateway: Gateway) -> None:
    async with AsyncAirlock(gateway.url) as airlock:
        result = await airlock.run("hello")
        assert_hello_result(result)
        session = await airlock.get_session(result.session_id)
        assert (session.status, session.last_seq) == ("idle", result.last_seq)


def test_run_in_a_given_session_owns_the_interval_after_the_earlier_log(airlock: Airlock) -> None:
    session = airlock.create_session()
    first = airlock.run("hello", session_id=session.session_id)
    second = airlock.run("again", session_id=session.session_id)
    assert second.session_id == session.session_id
    assert second.first_seq == first.last_seq + 1
    assert second.final_response.startswith('You said: "again"')
    assert second.events[0].type == "agent/inbox/spliced"


def test_a_sessions_usage_is_what_its_runs_used_and_the_demo_costs_nothing(
    airlock: Airlock,
) -> None:
    session = airlock.create_session(fallback=[])
    assert session.fallback == []
    runs = [airlock.run(text, session_id=session.session_id) for text in ("hello", "again")]
    spent = airlock.session_usage(session.session_id)
    assert spent.usage.input_tokens == sum(r.usage.input_tokens for r in runs if r.usage)
    assert spent.usage.output_tokens == sum(r.usage.output_tokens for r in runs if r.usage)
    [demo] = spent.models
    assert (demo.provider, demo.model, demo.responses) == ("demo", "demo", 2)
    assert (spent.cost_usd, spent.estimate, spent.unpriced_responses) == (0.0, False, 0)
    assert airlock.usage().usage.output_tokens >= spent.usage.output_tokens
    assert airlock.usage(since=2**53).usage.output_tokens == 0


def test_a_run_in_a_new_session_takes_its_model_and_system(airlock: Airlock) -> None:
    result = airlock.run("hello", model="demo", system="Be brief.")
    header = next(e for e in result.events if e.type == "request/header")
    assert header.data["header"]["system"] == "Be brief."


def test_run_refuses_settings_that_do_not_fit_where_it_runs(airlock: Airlock) -> None:
    with pytest.raises(ValueError):
        airlock.run("hello", delivery="steer")
    with pytest.raises(ValueError):
        airlock.run("hello", session_id="s", model="demo")


def test_a_run_that_does_not_finish_in_time_raises_run_timeout(held_airlock: Airlock) -> None:
    session = held_airlock.create_session(model=HELD)
    with refused(504, "run-timeout") as raised:
        held_airlock.run("HOLD on", session_id=session.session_id, timeout_ms=200)
    message_id = raised.value.details["messageId"]
    assert held_airlock.receipt(session.session_id, message_id).state == "claimed"
