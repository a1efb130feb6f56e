"""Webhook subscriptions and schedules: their answers, their calls, and a verifier for the
deliveries a receiver gets (the Standard Webhooks rules: https://www.standardwebhooks.com).

The calls are ``Call``s like every other operation (``_protocol``); the sync and async clients
each make them with one-line methods.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._protocol import Call, Content, _compact, _content, _nothing, _seg

Json = Any

WEBHOOK_EVENTS = (
    "session.idle",
    "session.requires_action",
    "session.failed",
    "run.completed",
    "turn.ended",
)
"""The event types a subscription may ask for."""


@dataclass(frozen=True, slots=True)
class Webhook:
    """A webhook subscription: where it posts, what it is told, and how its deliveries went
    (``status`` is ``active`` or ``failing``; a failing one gets nothing until resumed)."""

    id: str
    url: str
    events: list[str]
    session_id: str | None
    every_tenant: bool
    created_at: int
    status: str
    delivered: int
    pending: int
    dropped: int
    failing_since: int | None = None
    last_error: str | None = None
    last_error_at: int | None = None
    last_delivered_at: int | None = None
    secret: str | None = None
    """Only in the answer that made it: what signs its deliveries (``whsec_…``)."""

    @classmethod
    def from_json(cls, obj: Json) -> Webhook:
        return cls(
            id=obj["id"],
            url=obj["url"],
            events=list(obj["events"]),
            session_id=obj.get("sessionId"),
            every_tenant=obj["everyTenant"],
            created_at=obj["createdAt"],
            status=obj["status"],
            delivered=obj["delivered"],
            pending=obj["pending"],
            dropped=obj["dropped"],
            failing_since=obj.get("failingSince"),
            last_error=obj.get("lastError"),
            last_error_at=obj.get("lastErrorAt"),
            last_delivered_at=obj.get("lastDeliveredAt"),
            secret=obj.get("secret"),
        )


@dataclass(frozen=True, slots=True)
class Schedule:
    """A schedule: at each due time of ``cron`` in ``timezone`` it sends ``content`` to
    ``session_id`` (or to a session it makes), with what it did so far."""

    id: str
    cron: str
    timezone: str
    session_id: str | None
    fresh: bool
    content: list[dict[str, Any]]
    delivery: str
    overlap: str
    catch_up: str
    paused: bool
    next_at: int
    created_at: int
    fired: int
    skipped: int
    last_fired_at: int | None = None
    last_session_id: str | None = None
    last_error: str | None = None

    @classmethod
    def from_json(cls, obj: Json) -> Schedule:
        return cls(
            id=obj["id"],
            cron=obj["cron"],
            timezone=obj["timezone"],
            session_id=obj.get("sessionId"),
            fresh=obj["fresh"],
            content=list(obj["content"]),
            delivery=obj["delivery"],
            overlap=obj["overlap"],
            catch_up=obj["catchUp"],
            paused=obj["paused"],
            next_at=obj["nextAt"],
            created_at=obj["createdAt"],
            fired=obj["fired"],
            skipped=obj["skipped"],
            last_fired_at=obj.get("lastFiredAt"),
            last_session_id=obj.get("lastSessionId"),
            last_error=obj.get("lastError"),
        )


def _items(parse: Any) -> Any:
    return lambda obj: [parse(item) for item in obj["items"]]


def _webhook(webhook_id: str, *rest: str) -> str:
    return "/".join(["/v1/webhooks", _seg(webhook_id), *rest])


def _schedule(schedule_id: str, *rest: str) -> str:
    return "/".join(["/v1/schedules", _seg(schedule_id), *rest])


def create_webhook(url: str, events: Sequence[str], session_id: str | None) -> Call[Webhook]:
    body = _compact(url=url, events=list(events), sessionId=session_id)
    return Call("POST", "/v1/webhooks", Webhook.from_json, body=body)


def webhooks() -> Call[list[Webhook]]:
    return Call("GET", "/v1/webhooks", _items(Webhook.from_json))


def webhook(webhook_id: str) -> Call[Webhook]:
    return Call("GET", _webhook(webhook_id), Webhook.from_json)


def delete_webhook(webhook_id: str) -> Call[None]:
    return Call("DELETE", _webhook(webhook_id), _nothing)


def resume_webhook(webhook_id: str) -> Call[Webhook]:
    return Call("POST", _webhook(webhook_id, "resume"), Webhook.from_json)


def create_schedule(
    cron: str,
    content: Content,
    *,
    session_id: str | None,
    session: Mapping[str, Any] | None,
    fresh: bool | None,
    timezone: str | None,
    delivery: str | None,
    overlap: str | None,
    catch_up: str | None,
) -> Call[Schedule]:
    body = _compact(
        cron=cron,
        timezone=timezone,
        sessionId=session_id,
        session=dict(session) if session is not None else None,
        fresh=fresh,
        content=_content(content),
        delivery=delivery,
        overlap=overlap,
        catchUp=catch_up,
    )
    return Call("POST", "/v1/schedules", Schedule.from_json, body=body)


def schedules() -> Call[list[Schedule]]:
    return Call("GET", "/v1/schedules", _items(Schedule.from_json))


def schedule(schedule_id: str) -> Call[Schedule]:
    return Call("GET", _schedule(schedule_id), Schedule.from_json)


def delete_schedule(schedule_id: str) -> Call[None]:
    return Call("DELETE", _schedule(schedule_id), _nothing)


def pause_schedule(schedule_id: str) -> Call[Schedule]:
    return Call("POST", _schedule(schedule_id, "pause"), Schedule.from_json)


def resume_schedule(schedule_id: str) -> Call[Schedule]:
    return Call("POST", _schedule(schedule_id, "resume"), Schedule.from_json)


class WebhookVerificationError(Exception):
    """A delivery that does not verify: a header is missing, its timestamp is too far from now,
    or no signature matches. Answer it with an error status and do not act on it."""


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    *,
    tolerance_s: float = 300.0,
    now: float | None = None,
) -> dict[str, Any]:
    """Checks a delivery's ``webhook-signature`` against the subscription's ``secret`` and
    returns its payload (``{"type", "timestamp", "data"}``); raises
    ``WebhookVerificationError`` otherwise. ``headers`` may be any mapping (names in any case);
    ``body`` is the request body exactly as received. A delivery whose ``webhook-timestamp`` is
    more than ``tolerance_s`` from ``now`` (the clock) is refused: an old one replayed."""
    if not secret.startswith("whsec_"):
        raise WebhookVerificationError("the secret is not a whsec_ secret")
    named = {name.lower(): value for name, value in headers.items()}
    try:
        message_id = named["webhook-id"]
        timestamp = named["webhook-timestamp"]
        signatures = named["webhook-signature"]
    except KeyError as missing:
        raise WebhookVerificationError(f"the delivery has no {missing.args[0]} header") from None
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError(f"webhook-timestamp {timestamp!r} is no time") from None
    clock = time.time() if now is None else now
    if abs(clock - sent_at) > tolerance_s:
        raise WebhookVerificationError("the delivery's timestamp is too far from now")
    raw = body.encode() if isinstance(body, str) else body
    key = base64.b64decode(secret.removeprefix("whsec_"))
    mac = hmac.new(key, f"{message_id}.{timestamp}.".encode() + raw, hashlib.sha256).digest()
    expected = base64.b64encode(mac).decode()
    for signature in signatures.split():
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return json.loads(raw)
    raise WebhookVerificationError("no signature of the delivery matches the secret")
