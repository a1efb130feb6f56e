"""Typed views of the gateway's JSON answers: snake_case attributes, built by ``from_json``.

The wire uses camelCase (docs/http-api.md, docs/events.md); these classes translate the fields
a client reads and keep payloads whose shape depends on the event type (``Event.data``,
``QueueItem.message``) as plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Json = Mapping[str, Any]

Delivery = Literal["followup", "steer", "inject"]
"""How a message is queued: ``followup`` (a turn of its own, the default), ``steer`` (joins the
running turn at its next step, or starts one) or ``inject`` (context; never wakes the agent)."""

Approval = Literal["always", "never"]
"""Whether a session's calls of a tool wait for a person: ``always`` (each call waits for
``approve`` or ``deny``) or ``never``."""


def _text_of(message: Json) -> str:
    """The text blocks of a message's content (those inside its tool results too), joined."""
    return "".join(_block_text(b) for b in message.get("content") or [])


def _block_text(block: Json) -> str:
    if block.get("type") == "text":
        return block.get("text", "")
    if block.get("type") == "tool-result":
        return "".join(_block_text(b) for b in block.get("content") or [])
    return ""


@dataclass(frozen=True, slots=True)
class Event:
    """One durable event of a session's log (docs/events.md).

    ``seq`` counts from 0 per session with no gaps; ``type`` is e.g. ``turn/start`` or
    ``assistant/message``; ``time`` is epoch milliseconds; ``data`` is the type's payload.
    """

    seq: int
    type: str
    time: int
    data: dict[str, Any]
    source_event_seqs: list[int] | None = None

    @classmethod
    def from_json(cls, obj: Json) -> Event:
        return cls(
            seq=obj["seq"],
            type=obj["type"],
            time=obj["time"],
            data=dict(obj.get("data") or {}),
            source_event_seqs=obj.get("sourceEventSeqs"),
        )

    @property
    def text(self) -> str:
        """The text of the message this event carries (``user/message``,
        ``assistant/message``, ``tool/result``), or ``""``."""
        if self.type == "user/message":
            return _text_of(self.data)
        return _text_of(self.data.get("message") or {})


@dataclass(frozen=True, slots=True)
class StatusChange:
    """A ``session.status`` frame: the session became (or, on connecting, is) ``idle`` or
    ``running``. Not part of the log; sent again on every reconnect."""

    session_id: str
    status: str


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One pending message in a session's inbox."""

    message_id: str
    target: str
    """``next-step`` (steering and context) or ``next-turn`` (followups)."""
    delivery: str
    message: dict[str, Any]

    @classmethod
    def from_json(cls, obj: Json) -> QueueItem:
        return cls(obj["messageId"], obj["target"], obj["delivery"], dict(obj["message"]))

    @property
    def text(self) -> str:
        """The message's text blocks, joined."""
        return _text_of(self.message)


@dataclass(frozen=True, slots=True)
class QueueChange:
    """The whole inbox: as the stream's ``session.queue`` frame lists it (once, where the log
    read meets the live events), then after each change to it (each ``agent/inbox/spliced``
    event, which the client applies)."""

    session_id: str
    items: list[QueueItem]


@dataclass(frozen=True, slots=True)
class Notice:
    """Any other frame of a session stream (``subagent.started``, ``subagent.finished``, and
    names a newer gateway may add), with its JSON ``data``."""

    name: str
    data: dict[str, Any]


Frame = Event | StatusChange | QueueChange | Notice
"""What ``frames()`` yields: log events and the live notices between them."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts summed over a run's assistant messages."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    @classmethod
    def from_json(cls, obj: Json) -> Usage:
        return cls(
            input_tokens=obj.get("inputTokens", 0),
            output_tokens=obj.get("outputTokens", 0),
            cache_read_tokens=obj.get("cacheReadTokens"),
            cache_write_tokens=obj.get("cacheWriteTokens"),
            reasoning_tokens=obj.get("reasoningTokens"),
        )


@dataclass(frozen=True, slots=True)
class Budget:
    """The most a session's model responses may spend: ``tokens`` (input plus output tokens of
    every response) and ``cost_usd`` (their cost in US dollars); ``None`` is no limit of that
    kind."""

    tokens: int | None = None
    cost_usd: float | None = None

    @classmethod
    def from_json(cls, obj: Json) -> Budget:
        return cls(tokens=obj.get("tokens"), cost_usd=obj.get("costUsd"))

    def to_json(self) -> dict[str, Any]:
        """The wire form, ``{"tokens"?, "costUsd"?}``, without the limits that are ``None``."""
        body: dict[str, Any] = {}
        if self.tokens is not None:
            body["tokens"] = self.tokens
        if self.cost_usd is not None:
            body["costUsd"] = self.cost_usd
        return body


@dataclass(frozen=True, slots=True)
class Spent:
    """What a session's model responses spent: ``tokens`` (input plus output, compaction
    summaries included) and ``cost_usd``, the same numbers as ``session_usage``."""

    tokens: int
    cost_usd: float

    @classmethod
    def from_json(cls, obj: Json) -> Spent:
        return cls(tokens=obj.get("tokens", 0), cost_usd=obj.get("costUsd", 0.0))


@dataclass(frozen=True, slots=True)
class BudgetState:
    """A session's budget (``None``: it has none), what it spent, and whether the budget holds
    it ``paused``: its steps wait until the budget is raised (``set_budget``)."""

    budget: Budget | None
    spent: Spent
    paused: bool

    @classmethod
    def from_json(cls, obj: Json) -> BudgetState:
        budget = obj.get("budget")
        return cls(
            budget=Budget.from_json(budget) if budget is not None else None,
            spent=Spent.from_json(obj["spent"]),
            paused=bool(obj.get("paused", False)),
        )


@dataclass(frozen=True, slots=True)
class WorkspaceFile:
    """A file in a session's workspace: its ``path`` (``/``-separated, relative to the
    workspace; code sees it under ``/workspace/``), its size and when it last changed (ms)."""

    path: str
    bytes: int
    modified_at: int

    @classmethod
    def from_json(cls, obj: Json) -> WorkspaceFile:
        return cls(path=obj["path"], bytes=obj["bytes"], modified_at=obj["modifiedAt"])


@dataclass(frozen=True, slots=True)
class Files:
    """A session's workspace: its files by path, what it counts against the quota
    (``charged_bytes``) and what all of the tenant's workspaces may hold (``quota_bytes``)."""

    items: list[WorkspaceFile]
    charged_bytes: int
    quota_bytes: int

    @classmethod
    def from_json(cls, obj: Json) -> Files:
        return cls(
            items=[WorkspaceFile.from_json(f) for f in obj["items"]],
            charged_bytes=obj["chargedBytes"],
            quota_bytes=obj["quotaBytes"],
        )


@dataclass(frozen=True, slots=True)
class BudgetPause:
    """Why a session paused (the data of its ``budget/exhausted`` event): the ``budget`` it had
    and what it had ``spent``; ``scope`` is ``session``."""

    scope: str
    budget: Budget
    spent: Spent

    @classmethod
    def from_json(cls, obj: Json) -> BudgetPause:
        return cls(
            scope=obj.get("scope", "session"),
            budget=Budget.from_json(obj.get("budget") or {}),
            spent=Spent.from_json(obj.get("spent") or {}),
        )


@dataclass(frozen=True, slots=True)
class RunResult:
    """What an owned run produced: the log from its message's insertion to the next idle.

    ``final_response`` is the text of the last assistant message in that interval (``""`` if
    none); ``finish_reason`` the kind of the last ``turn/end`` (``completed``, ``aborted``,
    ``error``, ``paused``, …; ``None`` if no turn ended); ``usage`` the tokens its assistant
    messages used (``None`` when the provider reported none); ``events`` are the log events
    ``first_seq..last_seq``; ``paused`` says why the session paused, when its budget ended the
    interval (``finish_reason`` is then ``paused``).
    """

    session_id: str
    message_id: str
    final_response: str
    finish_reason: str | None
    usage: Usage | None
    first_seq: int
    last_seq: int
    events: list[Event] = field(repr=False)
    paused: BudgetPause | None = None

    @classmethod
    def from_json(cls, obj: Json) -> RunResult:
        return cls(
            session_id=obj["sessionId"],
            message_id=obj["messageId"],
            final_response=obj.get("finalResponse", ""),
            finish_reason=obj.get("finishReason"),
            usage=Usage.from_json(obj["usage"]) if obj.get("usage") else None,
            first_seq=obj["firstSeq"],
            last_seq=obj["lastSeq"],
            events=[Event.from_json(e) for e in obj.get("events", [])],
            paused=BudgetPause.from_json(obj["paused"]) if obj.get("paused") else None,
        )


@dataclass(frozen=True, slots=True)
class GoalReason:
    """Why a goal is paused or blocked: ``code`` such as ``request``, ``cancel``,
    ``round-limit`` or ``model``."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Goal:
    """A session's goal: an objective the gateway keeps working on in rounds.

    ``phase`` is ``active``, ``paused``, ``blocked`` or ``complete``; ``armed`` says whether
    rounds run in this gateway process (``None`` where the gateway does not say).
    """

    id: str
    objective: str
    phase: str
    max_rounds: int
    rounds_started: int
    revision: int
    armed: bool | None = None
    blocked: GoalReason | None = None
    paused: GoalReason | None = None

    @classmethod
    def from_json(cls, obj: Json) -> Goal:
        def reason(key: str) -> GoalReason | None:
            value = obj.get(key)
            return GoalReason(value["code"], value.get("message", "")) if value else None

        return cls(
            id=obj["id"],
            objective=obj["objective"],
            phase=obj["phase"],
            max_rounds=obj["maxRounds"],
            rounds_started=obj["roundsStarted"],
            revision=obj["revision"],
            armed=obj.get("armed"),
            blocked=reason("blocked"),
            paused=reason("paused"),
        )


@dataclass(frozen=True, slots=True)
class ForkedFrom:
    """Where a fork's log was copied from: the source session and the seq of the last event
    copied."""

    session_id: str
    seq: int

    @classmethod
    def from_json(cls, obj: Json) -> ForkedFrom:
        return cls(obj["sessionId"], obj["seq"])


@dataclass(frozen=True, slots=True)
class Session:
    """A session as the gateway describes it.

    ``last_seq`` is -1 for an empty log; ``pending_next_turn`` and ``pending_next_step`` count
    the queued items; ``created_at`` and ``updated_at`` are epoch milliseconds;
    ``forked_from`` names a fork's source (``None`` for a session that is not a fork);
    ``fallback`` the models its steps fail over to, when it was created with its own list;
    ``budget`` its budget (``None``: none), and ``paused`` whether the budget holds it paused;
    ``metadata`` what it keeps for its client (any JSON; a subagent's is ``{"name": …}``).
    """

    session_id: str
    status: str
    last_seq: int
    model: str
    disposed: bool
    created_at: int
    updated_at: int
    pending_next_turn: int = 0
    pending_next_step: int = 0
    parent_session_id: str | None = None
    goal: Goal | None = None
    forked_from: ForkedFrom | None = None
    fallback: list[str] | None = None
    budget: Budget | None = None
    paused: bool = False
    metadata: Any = None

    @classmethod
    def from_json(cls, obj: Json) -> Session:
        pending = obj.get("pending") or {}
        goal = obj.get("goal")
        forked_from = obj.get("forkedFrom")
        budget = obj.get("budget")
        return cls(
            session_id=obj["sessionId"],
            status=obj["status"],
            last_seq=obj["lastSeq"],
            model=obj["model"],
            disposed=obj["disposed"],
            created_at=obj["createdAt"],
            updated_at=obj["updatedAt"],
            pending_next_turn=pending.get("nextTurn", 0),
            pending_next_step=pending.get("nextStep", 0),
            parent_session_id=obj.get("parentSessionId"),
            goal=Goal.from_json(goal) if goal else None,
            forked_from=ForkedFrom.from_json(forked_from) if forked_from else None,
            fallback=obj.get("fallback"),
            budget=Budget.from_json(budget) if budget is not None else None,
            paused=bool(obj.get("paused", False)),
            metadata=obj.get("metadata"),
        )


@dataclass(frozen=True, slots=True)
class SessionStatus:
    """A session's status (``idle`` or ``running``) and the seq of its last log event."""

    session_id: str
    status: str
    last_seq: int

    @classmethod
    def from_json(cls, obj: Json) -> SessionStatus:
        return cls(obj["sessionId"], obj["status"], obj["lastSeq"])


@dataclass(frozen=True, slots=True)
class ModelSpending:
    """What one model's responses spent; ``cost_usd`` is ``None`` when the model has no price,
    and ``estimate`` says the price is the gateway's default for a well-known model."""

    provider: str
    model: str
    responses: int
    usage: Usage
    cost_usd: float | None
    estimate: bool
    tenant: str | None = None

    @classmethod
    def from_json(cls, obj: Json) -> ModelSpending:
        return cls(
            obj["provider"],
            obj["model"],
            obj["responses"],
            Usage.from_json(obj["usage"]),
            obj.get("costUsd"),
            obj["estimate"],
            obj.get("tenant"),
        )


@dataclass(frozen=True, slots=True)
class Spending:
    """What sessions spent: every token, the cost of the priced models in US dollars, how many
    responses had no price, and the same by model (by tenant too, for an admin key)."""

    usage: Usage
    cost_usd: float
    estimate: bool
    unpriced_responses: int
    models: list[ModelSpending]

    @classmethod
    def from_json(cls, obj: Json) -> Spending:
        return cls(
            Usage.from_json(obj["usage"]),
            obj["costUsd"],
            obj["estimate"],
            obj["unpricedResponses"],
            [ModelSpending.from_json(m) for m in obj["models"]],
        )


@dataclass(frozen=True, slots=True)
class SessionPage:
    """One page of sessions, ordered by id; pass ``next_cursor`` as ``cursor`` for the next
    page (``None`` after the last)."""

    items: list[Session]
    next_cursor: str | None

    @classmethod
    def from_json(cls, obj: Json) -> SessionPage:
        return cls([Session.from_json(s) for s in obj["items"]], obj.get("nextCursor"))


@dataclass(frozen=True, slots=True)
class SendReceipt:
    """The answer to a send: the message's id and the seq of the log event that queued it.

    The message is durably queued; what the agent does with it arrives on ``events()``.
    """

    message_id: str
    seq: int

    @classmethod
    def from_json(cls, obj: Json) -> SendReceipt:
        return cls(obj["messageId"], obj["seq"])


@dataclass(frozen=True, slots=True)
class Receipt:
    """Where a sent message is now: ``state`` ``pending``, ``claimed`` (a turn took it, see
    ``turn``) or ``canceled``; ``target`` the inbox list it is (or was last) in."""

    message_id: str
    state: str
    target: str
    inserted_seq: int
    claimed_seq: int | None = None
    turn: int | None = None
    canceled_seq: int | None = None

    @classmethod
    def from_json(cls, obj: Json) -> Receipt:
        return cls(
            message_id=obj["messageId"],
            state=obj["state"],
            target=obj["target"],
            inserted_seq=obj["insertedSeq"],
            claimed_seq=obj.get("claimedSeq"),
            turn=obj.get("turn"),
            canceled_seq=obj.get("canceledSeq"),
        )


@dataclass(frozen=True, slots=True)
class EventPage:
    """A page of a session's log: ``events`` after the given seq, ``next_after`` to pass as
    ``after`` for the next page, ``has_more`` when the log goes on, ``last_seq`` the log's end."""

    events: list[Event]
    last_seq: int
    next_after: int
    has_more: bool

    @classmethod
    def from_json(cls, obj: Json) -> EventPage:
        return cls(
            events=[Event.from_json(e) for e in obj["events"]],
            last_seq=obj["lastSeq"],
            next_after=obj["nextAfter"],
            has_more=obj["hasMore"],
        )


@dataclass(frozen=True, slots=True)
class WaitingCall:
    """A tool call of the running step that waits for an answer.

    ``kind`` is ``approval`` (a person approves or denies it) or ``client`` (the client runs
    the tool and posts its result); ``arguments`` is the raw JSON text the model produced;
    ``since`` is when it started waiting, in epoch milliseconds.
    """

    call_id: str
    name: str
    arguments: str
    kind: str
    since: int

    @classmethod
    def from_json(cls, obj: Json) -> WaitingCall:
        return cls(obj["callId"], obj["name"], obj["arguments"], obj["kind"], obj["since"])


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the gateway offers models; ``parameters`` is its arguments' JSON Schema and
    ``origin`` ``builtin`` or ``plugin:<name>``."""

    name: str
    description: str
    parameters: dict[str, Any]
    parallel_safe: bool
    origin: str

    @classmethod
    def from_json(cls, obj: Json) -> Tool:
        return cls(
            obj["name"],
            obj.get("description", ""),
            dict(obj.get("parameters") or {}),
            bool(obj.get("parallelSafe", False)),
            obj.get("origin", ""),
        )
