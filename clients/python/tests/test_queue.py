"""Queue operations, cancel and compact. Turns are kept running by the held model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from _held_model import HeldModel
from _refusals import refused
from _streams import HELD, first_chunk, is_status, is_type, until

from airlock_client import Airlock, Event, EventStream, Frame, QueueChange


@contextmanager
def held_turn(airlock: Airlock, queued: str) -> Iterator[tuple[str, EventStream[Frame], str]]:
    """A session whose turn the held model keeps running (in a step), with the followup
    `queued` sent behind it: the session's id, its open `frames()` and the followup's id."""
    s = airlock.create_session(model=HELD).session_id
    with airlock.frames(s) as frames:
        airlock.send(s, "HOLD: work")
        followup = airlock.send(s, queued).message_id
        until(frames, first_chunk)
        yield s, frames, followup


def test_queue_lists_edits_and_removes_pending_items(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    one = airlock.send(s, "one", delivery="inject").message_id
    two = airlock.send(s, "two", delivery="inject").message_id
    assert [(i.message_id, i.delivery, i.target, i.text) for i in airlock.queue(s)] == [
        (one, "inject", "next-step", "one"),
        (two, "inject", "next-step", "two"),
    ]
    airlock.edit_queued(s, one, "one, edited")
    airlock.remove_queued(s, two)
    assert [(i.message_id, i.text) for i in airlock.queue(s)] == [(one, "one, edited")]
    assert airlock.receipt(s, two).state == "canceled"
    with refused(404, "queue-item-not-found"):
        airlock.remove_queued(s, two)


def test_steering_an_item_of_an_idle_session_raises_steer_unavailable(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    item = airlock.send(s, "later", delivery="inject").message_id
    with refused(409, "steer-unavailable"):
        airlock.steer_queued(s, item)


def test_steering_a_queued_followup_moves_it_into_the_running_turn(
    held_airlock: Airlock, held_model: HeldModel
) -> None:
    airlock = held_airlock
    with held_turn(airlock, "second") as (s, frames, second):
        assert [(i.message_id, i.target) for i in airlock.queue(s)] == [(second, "next-turn")]

        airlock.steer_queued(s, second)
        assert airlock.receipt(s, second).target == "next-step"
        steering = until(
            frames,
            lambda f: isinstance(f, QueueChange) and any(i.delivery == "steer" for i in f.items),
        )[-1]
        assert [i.message_id for i in steering.items] == [second]

        held_model.release()
        rest = until(frames, is_status("idle"))
    events = [f for f in rest if isinstance(f, Event)]
    entered = [e.text for e in events if e.type == "user/message"]
    assert entered == ["second"], "the steered message entered the running turn"
    assert [e.data["turn"] for e in events if e.type == "turn/end"] == [1]
    assert airlock.receipt(s, second).turn == 1


def test_cancel_ends_the_running_turn_and_parks_the_queue(held_airlock: Airlock) -> None:
    airlock = held_airlock
    with held_turn(airlock, "next") as (s, frames, parked):
        airlock.cancel(s)
        ended = until(frames, is_status("idle"))
    turn_end = next(f for f in ended if isinstance(f, Event) and f.type == "turn/end")
    assert turn_end.data["reason"] == {"kind": "aborted", "reason": {"kind": "user"}}
    assert [i.message_id for i in airlock.queue(s)] == [parked]
    assert airlock.receipt(s, parked).state == "pending"


def test_cancel_without_keeping_the_inbox_clears_the_queue(held_airlock: Airlock) -> None:
    airlock = held_airlock
    with held_turn(airlock, "next") as (s, frames, dropped):
        airlock.cancel(s, keep_inbox=False)
        until(frames, is_status("idle"))
    assert airlock.queue(s) == []
    assert airlock.receipt(s, dropped).state == "canceled"


def test_cancel_of_an_idle_session_is_accepted(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    airlock.cancel(s)
    assert airlock.session_status(s).status == "idle"


def test_compact_summarizes_an_idle_conversation(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    with refused(409, "nothing-to-compact"):
        airlock.compact(s)
    result = airlock.run("hello", session_id=s)
    airlock.compact(s)
    with airlock.events(s, after=result.last_seq) as events:
        compaction = until(events, is_type("context/compaction"))[-1]
    assert compaction.data["trigger"] == "manual"
