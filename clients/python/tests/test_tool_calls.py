"""A person in the loop: tool calls that wait for an approval or for the client's result, and
forks. The demo model calls the tool a message names (`/tool NAME ARGUMENTS`); each test follows
the session's events to the call that waits, answers it, and follows them to the turn's end."""

from __future__ import annotations

import pytest
from _gateway import Gateway
from _refusals import refused
from _streams import approval_requested, auntil, client_call, is_type, until

from airlock_client import (
    Airlock,
    AsyncAirlock,
    Event,
    ForkedFrom,
    client_tool,
    text_block,
    tool_policy,
)

ECHO = '/tool echo {"text":"hi"}'
ASK = '/tool ask_user {"question":"Colour?"}'

# The test's gateway is started with `AIRLOCK_APPROVAL_FOR=echo`: each `echo` call waits for a
# person, unless the session says otherwise.
approving = pytest.mark.gateway_env({"AIRLOCK_APPROVAL_FOR": "echo"})


def only_result(events: list[Event]) -> Event:
    """The one `tool/result` among `events`."""
    [result] = [e for e in events if e.type == "tool/result"]
    return result


def test_approve_runs_a_call_that_waits_for_approval(airlock: Airlock) -> None:
    s = airlock.create_session(tools=[tool_policy("echo", "always")]).session_id
    with airlock.events(s) as events:
        airlock.send(s, ECHO)
        call_id = until(events, approval_requested)[-1].data["callId"]
        assert airlock.session_status(s).status == "running", "the step waits, unfinished"
        airlock.approve(s, call_id)
        rest = until(events, is_type("turn/end"))
    assert [e.data["state"] for e in rest if e.type == "tool/approval"] == ["approved"]
    result = only_result(rest)
    assert "error" not in result.data
    assert result.data["message"]["content"][0]["toolCallId"] == call_id
    assert result.text == "echo: hi"
    assert rest[-1].data["reason"] == {"kind": "completed"}
    with refused(409, "not-waiting"):
        airlock.approve(s, call_id)


@approving
def test_deny_answers_the_call_denied_by_user_with_the_reason(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    with airlock.events(s) as events:
        airlock.send(s, ECHO)
        call_id = until(events, approval_requested)[-1].data["callId"]
        airlock.deny(s, call_id, reason="not today")
        rest = until(events, is_type("turn/end"))
    denied = next(e for e in rest if e.type == "tool/approval")
    assert (denied.data["callId"], denied.data["state"], denied.data["reason"]) == (
        call_id,
        "denied",
        "not today",
    )
    result = only_result(rest)
    assert result.data["error"]["code"] == "DENIED_BY_USER"
    assert "not today" in result.text
    with refused(409, "not-waiting"):
        airlock.approve(s, call_id)


@approving
def test_a_session_policy_of_never_overrides_the_gateways_approval_for(airlock: Airlock) -> None:
    s = airlock.create_session(tools=[tool_policy("echo", "never")]).session_id
    result = airlock.run(ECHO, session_id=s)
    assert [e.type for e in result.events if e.type.startswith("tool/")] == [
        "tool/call",
        "tool/result",
    ]
    assert result.final_response == "The echo tool returned: echo: hi"


def test_a_client_tool_result_is_accepted_and_a_second_one_raises_not_waiting(
    airlock: Airlock,
) -> None:
    ask_user = client_tool(
        "ask_user",
        description="Asks the person a question.",
        parameters={"type": "object", "properties": {"question": {"type": "string"}}},
        timeout_ms=60_000,
    )
    s = airlock.create_session(client_tools=[ask_user]).session_id
    with airlock.events(s) as events:
        airlock.send(s, ASK)
        call = until(events, client_call)[-1]
        assert (call.data["name"], call.data["arguments"]) == ("ask_user", '{"question":"Colour?"}')
        airlock.post_tool_result(s, call.data["callId"], "Blue")
        with refused(409, "not-waiting"):
            airlock.post_tool_result(s, call.data["callId"], "Green")
        rest = until(events, is_type("turn/end"))
    result = only_result(rest)
    assert "error" not in result.data and result.text == "Blue"
    answer = [e for e in rest if e.type == "assistant/message"][-1]
    assert answer.text == "The ask_user tool returned: Blue"


def test_a_client_tool_error_result_reaches_the_model_as_client_tool_error(
    airlock: Airlock,
) -> None:
    s = airlock.create_session(client_tools=[client_tool("ask_user")]).session_id
    with airlock.events(s) as events:
        airlock.send(s, ASK)
        call_id = until(events, client_call)[-1].data["callId"]
        airlock.post_tool_result(s, call_id, [text_block("nobody answered")], is_error=True)
        rest = until(events, is_type("turn/end"))
    result = only_result(rest)
    assert result.data["error"]["code"] == "CLIENT_TOOL_ERROR"
    assert result.text == "nobody answered"


def test_tool_calls_lists_the_waiting_call_with_its_kind(airlock: Airlock) -> None:
    made = airlock.create_session(
        tools=[tool_policy("echo", "always")], client_tools=[client_tool("ask_user")]
    )
    s = made.session_id
    assert airlock.tool_calls(s) == []
    with airlock.events(s) as events:
        airlock.send(s, ECHO)
        call_id = until(events, approval_requested)[-1].data["callId"]
        [waiting] = airlock.tool_calls(s)
        assert (waiting.call_id, waiting.name, waiting.arguments, waiting.kind) == (
            call_id,
            "echo",
            '{"text":"hi"}',
            "approval",
        )
        assert waiting.since >= made.created_at
        with refused(409, "not-waiting"):
            airlock.post_tool_result(s, call_id, "a result for a call that waits for approval")
        airlock.approve(s, call_id)
        until(events, is_type("turn/end"))
        assert airlock.tool_calls(s) == []

        airlock.send(s, ASK)
        call_id = until(events, client_call)[-1].data["callId"]
        assert [(c.call_id, c.name, c.kind) for c in airlock.tool_calls(s)] == [
            (call_id, "ask_user", "client")
        ]
        with refused(409, "not-waiting"):
            airlock.approve(s, call_id)
        airlock.post_tool_result(s, call_id, "Blue")
        until(events, is_type("turn/end"))
    assert airlock.tool_calls(s) == []
    with refused(404, "tool-call-not-found"):
        airlock.deny(s, "no-such-call")


def test_fork_at_a_seq_returns_a_session_forked_from_the_source_at_that_seq(
    airlock: Airlock,
) -> None:
    source = airlock.run("hello")
    s = source.session_id
    assert source.events[4].type == "user/message", "the turn is open at seq 4"
    fork = airlock.fork(s, at_seq=4, fork_id="the-fork")
    assert fork.session_id == "the-fork"
    assert fork.forked_from == ForkedFrom(s, 4)
    assert (fork.status, fork.model, fork.disposed) == ("idle", "demo", False)
    assert airlock.get_session("the-fork").forked_from == ForkedFrom(s, 4)
    assert airlock.get_session(s).forked_from is None

    log = airlock.event_page("the-fork").events
    assert [(e.seq, e.type) for e in log[:5]] == [(e.seq, e.type) for e in source.events[:5]]
    assert [e.type for e in log[-2:]] == ["turn/end", "session/end-seed"]
    assert log[-1].seq == fork.last_seq
    again = airlock.run("again", session_id="the-fork")
    assert (again.first_seq, again.finish_reason) == (fork.last_seq + 1, "completed")
    assert airlock.session_status(s).last_seq == source.last_seq, "the source is untouched"


def test_fork_refuses_a_seq_not_logged_and_an_id_that_exists(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    with refused(409, "seq-not-logged"):
        airlock.fork(s)
    result = airlock.run("hello", session_id=s)
    with refused(409, "seq-not-logged"):
        airlock.fork(s, at_seq=result.last_seq + 1)

    whole = airlock.fork(s)
    assert whole.forked_from == ForkedFrom(s, result.last_seq)
    with refused(409, "session-conflict"):
        airlock.fork(s, fork_id=whole.session_id)


@pytest.mark.anyio
async def test_async_client_approves_denies_posts_results_and_forks(gateway: Gateway) -> None:
    async with AsyncAirlock(gateway.url) as airlock:
        made = await airlock.create_session(
            tools=[tool_policy("echo", "always")], client_tools=[client_tool("ask_user")]
        )
        s = made.session_id
        async with airlock.events(s) as events:
            await airlock.send(s, ECHO)
            call_id = (await auntil(events, approval_requested))[-1].data["callId"]
            assert [(c.call_id, c.kind) for c in await airlock.tool_calls(s)] == [
                (call_id, "approval")
            ]
            await airlock.approve(s, call_id)
            approved = await auntil(events, is_type("turn/end"))

            await airlock.send(s, ECHO)
            call_id = (await auntil(events, approval_requested))[-1].data["callId"]
            await airlock.deny(s, call_id, "no")
            denied = await auntil(events, is_type("turn/end"))

            await airlock.send(s, ASK)
            call_id = (await auntil(events, client_call))[-1].data["callId"]
            await airlock.post_tool_result(s, call_id, "Blue")
            with refused(409, "not-waiting"):
                await airlock.post_tool_result(s, call_id, "Blue")
            answered = await auntil(events, is_type("turn/end"))

        assert "error" not in only_result(approved).data
        assert only_result(denied).data["error"]["code"] == "DENIED_BY_USER"
        assert only_result(answered).text == "Blue"
        assert await airlock.tool_calls(s) == []

        at = approved[-1].seq
        fork = await airlock.fork(s, at_seq=at, fork_id="async-fork")
        assert (fork.session_id, fork.forked_from) == ("async-fork", ForkedFrom(s, at))
        assert (await airlock.get_session("async-fork")).forked_from == ForkedFrom(s, at)
