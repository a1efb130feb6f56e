"""Each API operation as a ``Call``: the request to make and how to read its answer.

The sync and async clients share these, so each of their methods is a one-line ``_do(call)``
and the HTTP details (paths, camelCase bodies, headers) live in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from . import _models as m
from ._errors import AirlockError
from ._version import USER_AGENT

T = TypeVar("T")

Content = str | Sequence[Mapping[str, Any]]
"""A message's content: a string (one text block) or a list of content blocks
(see ``text_block`` and ``image_block``)."""

ToolChoice = str | Mapping[str, Any]
"""A gateway tool a session offers: its name, or its name with an approval policy
(``{"name", "approval"}``, see ``tool_policy``)."""

BudgetLimits = m.Budget | Mapping[str, Any]
"""A session's budget: ``{"tokens"?, "costUsd"?}`` as the wire has it, or a ``Budget``."""

NO_BODY: Any = object()
"""A request sent without a body (the gateway reads a body-less POST as ``{}``)."""

# How much longer than a run's own timeout the client waits for the gateway's 504.
_RUN_TIMEOUT_MARGIN_S = 30.0


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and the function that turns its decoded JSON answer into ``T``."""

    method: str
    path: str
    parse: Callable[[Any], T]
    body: Any = NO_BODY
    params: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: Any = httpx.USE_CLIENT_DEFAULT
    # Bytes sent as they are (a file), instead of `body` as JSON.
    content: bytes | None = None
    # The answer is bytes (a file), handed to `parse` as they are.
    raw: bool = False


def _seg(value: str) -> str:
    """A path segment, percent-encoded."""
    return quote(str(value), safe="")


def _session(session_id: str, *rest: str) -> str:
    return "/".join(["/v1/sessions", _seg(session_id), *rest])


def _compact(**fields: Any) -> dict[str, Any]:
    """A body with the fields that are not ``None``."""
    return {k: v for k, v in fields.items() if v is not None}


def _content(content: Content) -> Any:
    return content if isinstance(content, str) else [dict(block) for block in content]


def _nothing(_: Any) -> None:
    return None


# Sessions


def _tool_choice(tool: ToolChoice) -> Any:
    return tool if isinstance(tool, str) else dict(tool)


def create_session(
    session_id: str | None,
    model: str | None,
    system: str | None,
    tools: Sequence[ToolChoice] | None,
    client_tools: Sequence[Mapping[str, Any]] | None,
    metadata: Any,
    fallback: Sequence[str] | None,
    budget: BudgetLimits | None = None,
) -> Call[m.Session]:
    body = _compact(
        sessionId=session_id,
        model=model,
        fallback=list(fallback) if fallback is not None else None,
        system=system,
        tools=[_tool_choice(t) for t in tools] if tools is not None else None,
        clientTools=[dict(t) for t in client_tools] if client_tools is not None else None,
        metadata=metadata,
        budget=_budget(budget) if budget is not None else None,
    )
    return Call("POST", "/v1/sessions", m.Session.from_json, body=body)


def list_sessions(cursor: str | None, limit: int | None) -> Call[m.SessionPage]:
    params = _compact(cursor=cursor, limit=limit)
    return Call("GET", "/v1/sessions", m.SessionPage.from_json, params=params)


def get_session(session_id: str) -> Call[m.Session]:
    return Call("GET", _session(session_id), m.Session.from_json)


def set_metadata(session_id: str, metadata: Any) -> Call[m.Session]:
    # Replaced whole; `None` (JSON null) keeps nothing.
    body = {"metadata": metadata}
    return Call("PATCH", _session(session_id), m.Session.from_json, body=body)


def session_status(session_id: str) -> Call[m.SessionStatus]:
    return Call("GET", _session(session_id, "status"), m.SessionStatus.from_json)


def session_usage(session_id: str) -> Call[m.Spending]:
    return Call("GET", _session(session_id, "usage"), m.Spending.from_json)


def usage(since: int | None) -> Call[m.Spending]:
    return Call("GET", "/v1/usage", m.Spending.from_json, params=_compact(since=since))


def _budget(budget: BudgetLimits) -> dict[str, Any]:
    return budget.to_json() if isinstance(budget, m.Budget) else dict(budget)


def budget(session_id: str) -> Call[m.BudgetState]:
    return Call("GET", _session(session_id, "budget"), m.BudgetState.from_json)


def set_budget(
    session_id: str, tokens: int | None, cost_usd: float | None
) -> Call[m.BudgetState]:
    # The budget is replaced whole: a limit left out is no limit, and `{}` removes the budget.
    body = _compact(tokens=tokens, costUsd=cost_usd)
    return Call("PATCH", _session(session_id, "budget"), m.BudgetState.from_json, body=body)


def children(session_id: str) -> Call[list[m.Session]]:
    def parse(obj: Any) -> list[m.Session]:
        return [m.Session.from_json(s) for s in obj["items"]]

    return Call("GET", _session(session_id, "children"), parse)


def _file(session_id: str, path: str) -> str:
    # Each name of the path percent-encoded, the `/`s between them kept.
    return _session(session_id, "files", *(_seg(name) for name in path.split("/")))


def files(session_id: str) -> Call[m.Files]:
    return Call("GET", _session(session_id, "files"), m.Files.from_json)


def download_file(session_id: str, path: str) -> Call[bytes]:
    return Call("GET", _file(session_id, path), bytes, raw=True)


def upload_file(session_id: str, path: str, data: bytes) -> Call[m.WorkspaceFile]:
    return Call("PUT", _file(session_id, path), m.WorkspaceFile.from_json, content=data)


def remove_file(session_id: str, path: str) -> Call[None]:
    return Call("DELETE", _file(session_id, path), _nothing)


def dispose_session(session_id: str) -> Call[None]:
    return Call("DELETE", _session(session_id), _nothing)


def tools() -> Call[list[m.Tool]]:
    def parse(obj: Any) -> list[m.Tool]:
        return [m.Tool.from_json(t) for t in obj["items"]]

    return Call("GET", "/v1/tools", parse)


# Input


def send(
    session_id: str, content: Content, delivery: m.Delivery | None, idempotency_key: str | None
) -> Call[m.SendReceipt]:
    headers = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else {}
    body = _compact(content=_content(content), delivery=delivery)
    path = _session(session_id, "messages")
    return Call("POST", path, m.SendReceipt.from_json, body=body, headers=headers)


def receipt(session_id: str, message_id: str) -> Call[m.Receipt]:
    return Call("GET", _session(session_id, "messages", _seg(message_id)), m.Receipt.from_json)


def queue(session_id: str) -> Call[list[m.QueueItem]]:
    def parse(obj: Any) -> list[m.QueueItem]:
        return [m.QueueItem.from_json(i) for i in obj["items"]]

    return Call("GET", _session(session_id, "queue"), parse)


def edit_queued(session_id: str, message_id: str, content: Content) -> Call[None]:
    path = _session(session_id, "queue", _seg(message_id))
    return Call("PATCH", path, _nothing, body={"content": _content(content)})


def remove_queued(session_id: str, message_id: str) -> Call[None]:
    return Call("DELETE", _session(session_id, "queue", _seg(message_id)), _nothing)


def steer_queued(session_id: str, message_id: str) -> Call[None]:
    return Call("POST", _session(session_id, "queue", _seg(message_id), "steer"), _nothing)


def cancel(session_id: str, keep_inbox: bool) -> Call[None]:
    return Call("POST", _session(session_id, "cancel"), _nothing, body={"keepInbox": keep_inbox})


def compact(session_id: str) -> Call[None]:
    return Call("POST", _session(session_id, "compact"), _nothing, body={})


# A person in the loop


def _tool_call(session_id: str, call_id: str, *rest: str) -> str:
    return _session(session_id, "tool-calls", _seg(call_id), *rest)


def tool_calls(session_id: str) -> Call[list[m.WaitingCall]]:
    def parse(obj: Any) -> list[m.WaitingCall]:
        return [m.WaitingCall.from_json(c) for c in obj["items"]]

    params = {"state": "waiting"}
    return Call("GET", _session(session_id, "tool-calls"), parse, params=params)


def approve(session_id: str, call_id: str) -> Call[None]:
    return Call("POST", _tool_call(session_id, call_id, "approve"), _nothing, body={})


def deny(session_id: str, call_id: str, reason: str | None) -> Call[None]:
    body = _compact(reason=reason)
    return Call("POST", _tool_call(session_id, call_id, "deny"), _nothing, body=body)


def post_tool_result(
    session_id: str, call_id: str, content: Content, is_error: bool
) -> Call[None]:
    body: dict[str, Any] = {"content": _content(content)}
    if is_error:
        body["isError"] = True
    return Call("POST", _tool_call(session_id, call_id, "result"), _nothing, body=body)


def fork(session_id: str, at_seq: int | None, fork_id: str | None) -> Call[m.Session]:
    body = _compact(atSeq=at_seq, sessionId=fork_id)
    return Call("POST", _session(session_id, "fork"), m.Session.from_json, body=body)


# Owned runs


def run(
    content: Content,
    session_id: str | None,
    delivery: m.Delivery | None,
    model: str | None,
    system: str | None,
    timeout_ms: int | None,
) -> Call[m.RunResult]:
    # The HTTP request lasts as long as the run: no read timeout unless the run has one.
    timeout = (
        httpx.Timeout(30.0, read=timeout_ms / 1000 + _RUN_TIMEOUT_MARGIN_S)
        if timeout_ms is not None
        else httpx.Timeout(30.0, read=None)
    )
    if session_id is None:
        if delivery is not None:
            raise ValueError("delivery applies to a run in an existing session (give session_id)")
        body = _compact(content=_content(content), model=model, system=system, timeoutMs=timeout_ms)
        return Call("POST", "/v1/runs", m.RunResult.from_json, body=body, timeout=timeout)
    if model is not None or system is not None:
        raise ValueError("model and system apply to a run in a new session (omit session_id)")
    body = _compact(content=_content(content), delivery=delivery, timeoutMs=timeout_ms)
    return Call(
        "POST", _session(session_id, "runs"), m.RunResult.from_json, body=body, timeout=timeout
    )


# Goals


def set_goal(session_id: str, objective: str, max_rounds: int | None) -> Call[m.Goal]:
    body = _compact(objective=objective, maxRounds=max_rounds)
    return Call("PUT", _session(session_id, "goal"), m.Goal.from_json, body=body)


def get_goal(session_id: str) -> Call[m.Goal]:
    return Call("GET", _session(session_id, "goal"), m.Goal.from_json)


def goal_action(session_id: str, action: str) -> Call[m.Goal]:
    """``pause``, ``resume`` or ``complete``."""
    return Call("POST", _session(session_id, "goal", action), m.Goal.from_json)


def clear_goal(session_id: str) -> Call[None]:
    return Call("DELETE", _session(session_id, "goal"), _nothing)


# Observation


def event_page(session_id: str, after: int | None, limit: int | None) -> Call[m.EventPage]:
    # An empty log's page says nextAfter -1, which the gateway refuses as `after`: both mean
    # "from the start", which is no `after` at all.
    if after is not None and after < 0:
        after = None
    params = _compact(format="json", after=after, limit=limit)
    return Call("GET", _session(session_id, "events"), m.EventPage.from_json, params=params)


def events_path(session_id: str) -> str:
    return _session(session_id, "events")


def client_headers(api_key: str | None) -> dict[str, str]:
    """The headers of every request a client makes: its ``User-Agent``, and the API key."""
    headers = {"User-Agent": USER_AGENT}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def answer(call: Call[T], response: httpx.Response) -> T:
    """The parsed answer to ``call``, or the ``AirlockError`` the gateway answered with."""
    if not response.is_success:
        raise AirlockError.from_response(response)
    if call.raw:
        return call.parse(response.content)
    return call.parse(response.json() if response.content else None)


def request_args(call: Call[Any]) -> dict[str, Any]:
    """The keyword arguments of ``httpx.Client.request`` for ``call``."""
    args: dict[str, Any] = {"headers": call.headers, "timeout": call.timeout}
    if call.params:
        args["params"] = call.params
    if call.body is not NO_BODY:
        args["json"] = call.body
    if call.content is not None:
        args["content"] = call.content
    return args
