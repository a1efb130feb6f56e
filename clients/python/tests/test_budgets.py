"""Budgets: a session whose spend reaches its budget pauses before its next step; raising the
budget resumes it where it stopped. The demo model counts tokens, so one answer spends a budget
of one token."""

from __future__ import annotations

import pytest
from _gateway import Gateway
from _refusals import refused
from _streams import is_type, until

from airlock_client import Airlock, AsyncAirlock, Budget, BudgetState


def test_a_budget_is_set_at_create_read_replaced_and_removed(airlock: Airlock) -> None:
    session = airlock.create_session(budget={"tokens": 1000})
    assert (session.budget, session.paused) == (Budget(tokens=1000), False)
    state = airlock.budget(session.session_id)
    assert isinstance(state, BudgetState)
    assert (state.budget, state.paused) == (Budget(tokens=1000), False)
    assert (state.spent.tokens, state.spent.cost_usd) == (0, 0)

    # Replaced whole: the token limit left out is no limit now.
    state = airlock.set_budget(session.session_id, cost_usd=2.5)
    assert state.budget == Budget(cost_usd=2.5)
    assert airlock.get_session(session.session_id).budget == Budget(cost_usd=2.5)
    # Neither limit: no budget at all.
    assert airlock.set_budget(session.session_id).budget is None
    assert airlock.get_session(session.session_id).budget is None

    plain = airlock.create_session()
    assert (plain.budget, plain.paused) == (None, False)
    assert airlock.budget(plain.session_id).budget is None


def test_a_budget_that_does_not_fit_is_a_bad_request_naming_it(airlock: Airlock) -> None:
    with refused(400, "bad-request") as raised:
        airlock.create_session(budget={"tokens": -1})
    assert raised.value.details["field"] == "budget"
    with refused(404, "session-not-found"):
        airlock.budget("no-such-session")


def test_a_spent_budget_pauses_the_session_and_raising_it_resumes_where_it_stopped(
    airlock: Airlock,
) -> None:
    s = airlock.create_session(budget=Budget(tokens=1)).session_id
    first = airlock.run("hello", session_id=s)
    assert (first.finish_reason, first.paused) == ("completed", None)

    # The budget is spent: the next step does not start, and the run's interval ends paused.
    second = airlock.run("again", session_id=s)
    assert second.finish_reason == "paused"
    assert second.paused is not None and second.paused.scope == "session"
    assert second.paused.budget == Budget(tokens=1)
    types = [e.type for e in second.events]
    assert "budget/exhausted" in types and "assistant/message" not in types
    end = second.events[types.index("turn/end")]
    assert end.data["reason"] == {"kind": "paused"}

    spent = airlock.session_usage(s).usage
    state = airlock.budget(s)
    assert state.paused and airlock.get_session(s).paused
    assert state.spent.tokens == spent.input_tokens + spent.output_tokens
    assert second.paused.spent.tokens == state.spent.tokens

    # While paused a message is accepted and queued, and starts nothing.
    sent = airlock.send(s, "more")
    assert airlock.receipt(s, sent.message_id).state == "pending"
    assert airlock.session_status(s).status == "idle"

    # Raising the budget resumes: "again" runs, then "more", one turn each.
    resumed = airlock.set_budget(s, tokens=10**9)
    assert (resumed.paused, resumed.budget) == (False, Budget(tokens=10**9))
    with airlock.events(s, after=sent.seq) as events:
        seen = until(events, is_type("budget/resumed"))
        seen += until(events, is_type("turn/end"))
        seen += until(events, is_type("turn/end"))
    answers = [e.text for e in seen if e.type == "user/message"]
    assert answers == ["again", "more"]
    ends = [e.data["reason"]["kind"] for e in seen if e.type == "turn/end"]
    assert ends == ["completed", "completed"]
    assert not airlock.budget(s).paused


def test_a_budget_that_is_still_spent_keeps_the_session_paused(airlock: Airlock) -> None:
    s = airlock.create_session(budget={"tokens": 1}).session_id
    airlock.run("hello", session_id=s)
    assert airlock.run("again", session_id=s).finish_reason == "paused"
    assert airlock.set_budget(s, tokens=2).paused


@pytest.mark.anyio
async def test_async_budget_calls_read_and_replace_the_budget(gateway: Gateway) -> None:
    async with AsyncAirlock(gateway.url) as client:
        s = (await client.create_session()).session_id
        state = await client.set_budget(s, tokens=5, cost_usd=0.25)
        assert state.budget == Budget(tokens=5, cost_usd=0.25)
        assert (await client.budget(s)).budget == Budget(tokens=5, cost_usd=0.25)
        created = await client.create_session(budget={"costUsd": 1})
        assert created.budget == Budget(cost_usd=1)
