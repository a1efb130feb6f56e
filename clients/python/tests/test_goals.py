"""Goals: set, read, pause, resume, complete and clear. The objective holds the model (its
round's message contains it), so exactly one round is in flight and nothing races the calls."""

from __future__ import annotations

from _refusals import refused
from _streams import HELD

from airlock_client import Airlock


def test_a_goal_goes_through_its_phases(held_airlock: Airlock) -> None:
    airlock = held_airlock
    s = airlock.create_session(model=HELD).session_id
    with refused(404, "goal-not-found"):
        airlock.get_goal(s)

    goal = airlock.set_goal(s, "HOLD: tidy the notes", max_rounds=3)
    assert (goal.objective, goal.phase, goal.max_rounds, goal.armed) == (
        "HOLD: tidy the notes",
        "active",
        3,
        True,
    )
    assert airlock.get_goal(s).id == goal.id

    paused = airlock.pause_goal(s)
    assert (paused.phase, paused.paused and paused.paused.code) == ("paused", "request")
    assert airlock.resume_goal(s).phase == "active"
    assert airlock.complete_goal(s).phase == "complete"
    with refused(409, "goal-conflict"):
        airlock.pause_goal(s)
    session = airlock.get_session(s)
    assert session.goal is not None and session.goal.phase == "complete"

    airlock.clear_goal(s)
    with refused(404, "goal-not-found"):
        airlock.get_goal(s)


def test_a_blank_objective_is_a_bad_request_naming_the_field(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    with refused(400, "bad-request") as raised:
        airlock.set_goal(s, "   ")
    assert raised.value.details["field"] == "objective"
