"""Sending messages: receipts, delivery, idempotency keys, content blocks."""

from __future__ import annotations

from _refusals import refused
from _streams import is_type, until

from airlock_client import Airlock, text_block


def test_send_returns_the_receipt_of_the_queued_message(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    sent = airlock.send(s, "hello")
    assert sent.seq == 0
    with airlock.events(s) as events:
        first = next(events)
        until(events, is_type("turn/end"))
    assert first.type == "agent/inbox/spliced"
    assert first.data["inserted"][0]["id"] == sent.message_id
    receipt = airlock.receipt(s, sent.message_id)
    assert (receipt.state, receipt.inserted_seq, receipt.turn) == ("claimed", 0, 1)


def test_an_idempotent_send_returns_the_same_message_id(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    first = airlock.send(s, "hello", idempotency_key="order-42")
    again = airlock.send(s, "hello", idempotency_key="order-42")
    assert again == first
    inserts = [
        e
        for e in airlock.event_page(s).events
        if e.type == "agent/inbox/spliced" and e.data.get("inserted")
    ]
    assert len(inserts) == 1, "the retry queued nothing"


def test_the_same_idempotency_key_with_another_body_raises_idempotency_conflict_in_its_session(
    airlock: Airlock,
) -> None:
    s = airlock.create_session().session_id
    airlock.send(s, "hello", idempotency_key="order-42")
    with refused(409, "idempotency-conflict"):
        airlock.send(s, "goodbye", idempotency_key="order-42")
    other = airlock.create_session().session_id
    elsewhere = airlock.send(other, "goodbye", idempotency_key="order-42")
    assert airlock.receipt(other, elsewhere.message_id).state != "canceled", (
        "a key is scoped to its session: the same key on another session is another key"
    )


def test_an_inject_on_an_idle_session_waits_for_the_next_turn(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    context = airlock.send(s, "fyi: it is Tuesday", delivery="inject")
    assert airlock.session_status(s).status == "idle"
    assert airlock.receipt(s, context.message_id).state == "pending"
    result = airlock.run([text_block("what day is it?")], session_id=s)
    entered = [e.text for e in result.events if e.type == "user/message"]
    assert entered == ["fyi: it is Tuesday", "what day is it?"]


def test_create_session_with_an_id_is_idempotent_and_conflicts_on_other_settings(
    airlock: Airlock,
) -> None:
    made = airlock.create_session("my-session", metadata={"team": "a"})
    assert (
        airlock.create_session("my-session", metadata={"team": "a"}).created_at == made.created_at
    )
    assert airlock.get_session("my-session").session_id == "my-session"
    with refused(409, "session-conflict"):
        airlock.create_session("my-session", system="other")
