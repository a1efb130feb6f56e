"""Webhook subscriptions and schedules through the client, and a delivery from the real
gateway to a receiver of the test's own, verified by the client's `verify_webhook`."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from _refusals import refused

from airlock_client import (
    Airlock,
    AsyncAirlock,
    Schedule,
    Webhook,
    WebhookVerificationError,
    verify_webhook,
)

# The example of the Standard Webhooks specification.
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
EXAMPLE = {
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
}
BODY = b'{"test": 2432232314}'


def test_verify_webhook_takes_the_specification_example() -> None:
    headers = {name.upper(): value for name, value in EXAMPLE.items()}  # any case
    assert verify_webhook(SECRET, headers, BODY, now=1614265330) == {"test": 2432232314}
    other = {**EXAMPLE, "webhook-signature": "v1,bm90IGl0 " + EXAMPLE["webhook-signature"]}
    assert verify_webhook(SECRET, other, BODY, now=1614265330 + 299) == {"test": 2432232314}


@pytest.mark.parametrize(
    ("headers", "body", "now", "why"),
    [
        ({**EXAMPLE, "webhook-signature": "v1,bm90IGl0"}, BODY, 1614265330, "no signature"),
        (EXAMPLE, b'{"test": 1}', 1614265330, "no signature"),
        (EXAMPLE, BODY, 1614265330 + 301, "too far"),
        ({"webhook-id": "x", "webhook-timestamp": "1"}, BODY, 1, "webhook-signature"),
    ],
)
def test_verify_webhook_refuses_a_forged_late_or_incomplete_delivery(
    headers: dict[str, str], body: bytes, now: int, why: str
) -> None:
    with pytest.raises(WebhookVerificationError, match=why):
        verify_webhook(SECRET, headers, body, now=now)


def test_a_subscription_is_made_listed_read_and_deleted(airlock: Airlock) -> None:
    made = airlock.create_webhook("https://hooks.example.com/in", ["session.idle", "run.completed"])
    assert isinstance(made, Webhook)
    assert made.secret is not None and made.secret.startswith("whsec_")
    assert (made.status, made.events) == ("active", ["session.idle", "run.completed"])
    assert [w.id for w in airlock.webhooks()] == [made.id]
    read = airlock.webhook(made.id)
    assert read.secret is None, "the secret is shown once"
    assert airlock.resume_webhook(made.id).status == "active"
    airlock.delete_webhook(made.id)
    with refused(404, "webhook-not-found"):
        airlock.webhook(made.id)
    with refused(400, "bad-request") as raised:
        airlock.create_webhook("http://hooks.example.com/in", ["session.idle"])
    assert raised.value.details["field"] == "url"
    with refused(400, "bad-request"):
        airlock.create_webhook("https://hooks.example.com/in", ["session.done"])


def test_a_schedule_is_made_paused_resumed_and_deleted(airlock: Airlock) -> None:
    session = airlock.create_session()
    made = airlock.create_schedule(
        "0 8 * * Mon-Fri", "Good morning", session_id=session.session_id, timezone="Europe/Paris"
    )
    assert isinstance(made, Schedule)
    assert (made.timezone, made.overlap, made.catch_up) == ("Europe/Paris", "skip", "once")
    assert made.content == [{"type": "text", "text": "Good morning"}]
    assert [s.id for s in airlock.schedules()] == [made.id]
    assert airlock.pause_schedule(made.id).paused
    assert not airlock.resume_schedule(made.id).paused
    airlock.delete_schedule(made.id)
    with refused(404, "schedule-not-found"):
        airlock.schedule(made.id)
    with refused(400, "bad-request") as raised:
        airlock.create_schedule("61 * * * *", "x", session_id=session.session_id)
    assert raised.value.details["field"] == "cron"


@pytest.mark.anyio
async def test_the_async_client_makes_and_lists_the_same(gateway: Any) -> None:
    async with AsyncAirlock(gateway.url) as airlock:
        made = await airlock.create_webhook("https://hooks.example.com/in", ["turn.ended"])
        assert [w.id for w in await airlock.webhooks()] == [made.id]
        await airlock.delete_webhook(made.id)
        assert await airlock.schedules() == []


class _Receiver(BaseHTTPRequestHandler):
    """Keeps the first delivery it gets (headers and body) and answers 204."""

    got: dict[str, Any] = {}
    arrived = threading.Event()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        if not self.arrived.is_set():
            type(self).got = {"headers": dict(self.headers.items()), "body": body}
            self.arrived.set()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.mark.gateway_env({"AIRLOCK_WEBHOOKS_ALLOW_LOOPBACK": "true"})
def test_a_delivery_from_the_gateway_verifies_with_the_secret(airlock: Airlock) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/in"
        made = airlock.create_webhook(url, ["session.idle"])
        session = airlock.create_session()
        airlock.send(session.session_id, "hello")
        assert _Receiver.arrived.wait(60), "a delivery within a minute"
        got = _Receiver.got
        payload = verify_webhook(made.secret or "", got["headers"], got["body"])
        assert payload["type"] == "session.idle"
        assert payload["data"]["sessionId"] == session.session_id
        assert json.loads(got["body"]) == payload
    finally:
        server.shutdown()
