"""``Airlock``: the blocking client."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx
from httpx_sse import EventSource

from . import _hooks as hooks
from . import _models as m
from . import _protocol as api
from ._errors import AirlockError
from ._hooks import Schedule, Webhook
from ._protocol import Content, ToolChoice
from ._stream import STREAM_TIMEOUT, EventStream, Follower, only_events

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:7700"


class Airlock:
    """A client of one Airlock gateway.

    ``api_key`` is sent as ``Authorization: Bearer`` (needed once the gateway has keys);
    ``timeout`` bounds every request in seconds, except runs, which last as long as they run,
    and event streams, which last until closed. Close the client with ``close()`` or use it as
    a context manager. Every refused request raises ``AirlockError``.

    >>> Airlock("http://127.0.0.1:7700").run("hello").final_response
    'You said: "hello". I am the demo model, …'
    """

    def __init__(
        self, base_url: str = DEFAULT_URL, api_key: str | None = None, *, timeout: float = 30.0
    ) -> None:
        headers = api.client_headers(api_key)
        self._http = httpx.Client(base_url=base_url, headers=headers, timeout=timeout)

    def close(self) -> None:
        """Closes the client's connections."""
        self._http.close()

    def __enter__(self) -> Airlock:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _do(self, call: api.Call[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, **api.request_args(call))
        except httpx.TransportError as exc:
            raise AirlockError.from_transport(exc) from exc
        return api.answer(call, response)

    # Sessions

    def create_session(
        self,
        session_id: str | None = None,
        *,
        model: str | None = None,
        system: str | None = None,
        tools: Sequence[ToolChoice] | None = None,
        client_tools: Sequence[Mapping[str, Any]] | None = None,
        metadata: Any = None,
        fallback: Sequence[str] | None = None,
        budget: api.BudgetLimits | None = None,
    ) -> m.Session:
        """Creates a session (or returns the existing one if ``session_id`` exists with the same
        settings). ``model`` defaults to the gateway's, ``tools`` to all of them; ``metadata``
        is any JSON, kept with the session. ``fallback`` lists the models its steps fail over to
        when ``model`` keeps failing (overload, 5xx, timeouts); ``[]`` for none; by default the
        gateway's settings for ``model``. ``budget`` (``{"tokens": …, "costUsd": …}``, either
        optional, or a ``Budget``) caps what its responses spend: once it is spent the session
        pauses before its next step until ``set_budget`` raises it.

        Each of ``tools`` is a gateway tool's name, or a name with an approval policy
        (``tool_policy("echo", "always")``: each call waits for ``approve`` or ``deny``).
        ``client_tools`` are tools the client runs (``client_tool("ask_user")``): each call
        waits for ``post_tool_result``.
        """
        return self._do(
            api.create_session(
                session_id, model, system, tools, client_tools, metadata, fallback, budget
            )
        )

    def get_session(self, session_id: str) -> m.Session:
        """Returns a session: its status, last seq, pending counts, model and goal."""
        return self._do(api.get_session(session_id))

    def list_sessions(
        self, *, cursor: str | None = None, limit: int | None = None
    ) -> m.SessionPage:
        """Returns a page of sessions (ordered by id, 100 by default, at most 1000)."""
        return self._do(api.list_sessions(cursor, limit))

    def session_status(self, session_id: str) -> m.SessionStatus:
        """Returns whether the session is ``idle`` or ``running``, and its last seq."""
        return self._do(api.session_status(session_id))

    def session_usage(self, session_id: str) -> m.Spending:
        """Returns what the session's own responses spent (steps and compaction summaries)."""
        return self._do(api.session_usage(session_id))

    def usage(self, *, since: int | None = None) -> m.Spending:
        """Returns what the key's tenant spent since ``since`` (ms since the epoch); with an
        admin key, every tenant's."""
        return self._do(api.usage(since))

    def budget(self, session_id: str) -> m.BudgetState:
        """Returns the session's budget (``None``: it has none), what it spent (the tokens and
        cost ``session_usage`` counts) and whether the budget holds it paused."""
        return self._do(api.budget(session_id))

    def set_budget(
        self, session_id: str, *, tokens: int | None = None, cost_usd: float | None = None
    ) -> m.BudgetState:
        """Replaces the session's budget whole: at most ``tokens`` tokens and ``cost_usd`` US
        dollars; a limit left ``None`` is no limit, so with neither the budget is removed.
        Returns the state after the change: a paused session whose new budget is not spent
        resumes where it stopped (``paused`` is then ``False``)."""
        return self._do(api.set_budget(session_id, tokens, cost_usd))

    # Files

    def files(self, session_id: str) -> m.Files:
        """Lists the session's workspace: the files its code tools (``python``,
        ``javascript``) wrote and those uploaded for them."""
        return self._do(api.files(session_id))

    def download_file(self, session_id: str, path: str) -> bytes:
        """Returns the bytes of the workspace file at ``path`` (``out/plot.png``)."""
        return self._do(api.download_file(session_id, path))

    def upload_file(self, session_id: str, path: str, data: bytes) -> m.WorkspaceFile:
        """Puts ``data`` in the session's workspace at ``path`` (making its directories,
        replacing a file there) for its code to read; bounded by the gateway's body limit and
        the tenant's workspace quota (``workspace-full``)."""
        return self._do(api.upload_file(session_id, path, data))

    def remove_file(self, session_id: str, path: str) -> None:
        """Removes the workspace file at ``path``."""
        self._do(api.remove_file(session_id, path))

    # Webhooks

    def create_webhook(
        self, url: str, events: Sequence[str], *, session_id: str | None = None
    ) -> Webhook:
        """Subscribes ``url`` to ``events`` (``WEBHOOK_EVENTS``) of the tenant's sessions, or
        of ``session_id`` alone. The answer's ``secret`` (shown only now) verifies each delivery
        (``verify_webhook``)."""
        return self._do(hooks.create_webhook(url, events, session_id))

    def webhooks(self) -> list[Webhook]:
        """Returns the tenant's webhook subscriptions, oldest first."""
        return self._do(hooks.webhooks())

    def webhook(self, webhook_id: str) -> Webhook:
        """Returns one subscription: whether it is failing and why, what it delivered."""
        return self._do(hooks.webhook(webhook_id))

    def delete_webhook(self, webhook_id: str) -> None:
        """Deletes a subscription and the deliveries waiting for it."""
        self._do(hooks.delete_webhook(webhook_id))

    def resume_webhook(self, webhook_id: str) -> Webhook:
        """Takes a failing subscription back: what is logged from now on is delivered."""
        return self._do(hooks.resume_webhook(webhook_id))

    # Schedules

    def create_schedule(
        self,
        cron: str,
        content: Content,
        *,
        session_id: str | None = None,
        session: Mapping[str, Any] | None = None,
        fresh: bool | None = None,
        timezone: str | None = None,
        delivery: m.Delivery | None = None,
        overlap: str | None = None,
        catch_up: str | None = None,
    ) -> Schedule:
        """Sends ``content`` at each due time of ``cron`` (``0 8 * * Mon-Fri``) in ``timezone``
        to ``session_id``, or to a session made from ``session`` (a ``create_session`` body;
        a new one each time with ``fresh``). ``overlap``: ``skip`` or ``queue``; ``catch_up``:
        ``once``, ``all`` or ``skip``."""
        call = hooks.create_schedule(
            cron,
            content,
            session_id=session_id,
            session=session,
            fresh=fresh,
            timezone=timezone,
            delivery=delivery,
            overlap=overlap,
            catch_up=catch_up,
        )
        return self._do(call)

    def schedules(self) -> list[Schedule]:
        """Returns the tenant's schedules, oldest first."""
        return self._do(hooks.schedules())

    def schedule(self, schedule_id: str) -> Schedule:
        """Returns one schedule: its next due time and what it did."""
        return self._do(hooks.schedule(schedule_id))

    def delete_schedule(self, schedule_id: str) -> None:
        """Deletes a schedule (the sessions it made stay)."""
        self._do(hooks.delete_schedule(schedule_id))

    def pause_schedule(self, schedule_id: str) -> Schedule:
        """Pauses a schedule: it sends nothing until resumed."""
        return self._do(hooks.pause_schedule(schedule_id))

    def resume_schedule(self, schedule_id: str) -> Schedule:
        """Resumes a schedule from its first due time after now."""
        return self._do(hooks.resume_schedule(schedule_id))

    def children(self, session_id: str) -> list[m.Session]:
        """Returns the subagent sessions the session started, oldest first."""
        return self._do(api.children(session_id))

    def set_metadata(self, session_id: str, metadata: Any) -> m.Session:
        """Replaces what the session keeps as ``metadata`` (any JSON value; ``None`` for
        nothing), e.g. ``{"title": …}``; returns the session after the change."""
        return self._do(api.set_metadata(session_id, metadata))

    def dispose_session(self, session_id: str) -> None:
        """Disposes of a session: cancels its work and refuses input from now on; its log and
        receipts stay readable. Disposing twice is fine."""
        self._do(api.dispose_session(session_id))

    def tools(self) -> list[m.Tool]:
        """Returns the tools the gateway offers to models."""
        return self._do(api.tools())

    # Input

    def send(
        self,
        session_id: str,
        content: Content,
        *,
        delivery: m.Delivery | None = None,
        idempotency_key: str | None = None,
    ) -> m.SendReceipt:
        """Queues a message and returns once it is durable: ``{message_id, seq}``.

        It does not wait for the agent; follow ``events()`` or use ``run()`` for that.
        ``delivery`` is ``followup`` (the default), ``steer`` or ``inject``. A retry with the
        same ``idempotency_key`` and body returns the first answer and queues nothing; the
        same key with another body or session raises ``AirlockError`` 409
        ``idempotency-conflict``.
        """
        return self._do(api.send(session_id, content, delivery, idempotency_key))

    def receipt(self, session_id: str, message_id: str) -> m.Receipt:
        """Returns where a sent message is: ``pending``, ``claimed`` by a turn, or
        ``canceled``."""
        return self._do(api.receipt(session_id, message_id))

    def queue(self, session_id: str) -> list[m.QueueItem]:
        """Returns the session's pending messages, ``next-step`` items first."""
        return self._do(api.queue(session_id))

    def edit_queued(self, session_id: str, message_id: str, content: Content) -> None:
        """Replaces the content of a pending message; it keeps its id, place and delivery."""
        self._do(api.edit_queued(session_id, message_id, content))

    def remove_queued(self, session_id: str, message_id: str) -> None:
        """Removes a pending message from the queue (its receipt becomes ``canceled``)."""
        self._do(api.remove_queued(session_id, message_id))

    def steer_queued(self, session_id: str, message_id: str) -> None:
        """Turns a queued followup into steering for the running turn. Raises
        ``steer-unavailable`` (409) when the session is idle or the item already steers."""
        self._do(api.steer_queued(session_id, message_id))

    def cancel(self, session_id: str, *, keep_inbox: bool = True) -> None:
        """Cancels the running turn. The queue is kept and parked, unless ``keep_inbox`` is
        false, which clears it first. A no-op on an idle session."""
        self._do(api.cancel(session_id, keep_inbox))

    def compact(self, session_id: str) -> None:
        """Starts summarizing an idle session's conversation; the result is a
        ``context/compaction`` event on its log."""
        self._do(api.compact(session_id))

    # A person in the loop

    def tool_calls(self, session_id: str) -> list[m.WaitingCall]:
        """Returns the calls of the running step that wait for an answer, in the order the
        model asked for them: ``kind`` ``approval`` (``approve`` or ``deny`` it) or ``client``
        (``post_tool_result``). Empty for a session at rest.

        To learn when a call starts waiting, follow ``events()``: a ``tool/approval`` event
        with state ``requested``, or a ``tool/call`` event with ``client: true``.
        """
        return self._do(api.tool_calls(session_id))

    def approve(self, session_id: str, call_id: str) -> None:
        """Approves a call that waits for a person; it runs now. Returns once the approval is
        durable. Raises ``tool-call-not-found`` (404) for a call the log never had and
        ``not-waiting`` (409) for one that has its answer or waits for a client's result."""
        self._do(api.approve(session_id, call_id))

    def deny(self, session_id: str, call_id: str, reason: str | None = None) -> None:
        """Denies a call that waits for a person: it does not run, and the model sees the
        error ``DENIED_BY_USER`` with ``reason``. Raises as ``approve`` does."""
        self._do(api.deny(session_id, call_id, reason))

    def post_tool_result(
        self, session_id: str, call_id: str, content: Content, is_error: bool = False
    ) -> None:
        """Answers a client tool's call with its result (a string or content blocks); with
        ``is_error`` the model sees it as the error ``CLIENT_TOOL_ERROR``. The turn goes on
        with it. Raises ``not-waiting`` (409) for a call that has its result already or waits
        for an approval, ``tool-call-not-found`` (404) for one the log never had."""
        self._do(api.post_tool_result(session_id, call_id, content, is_error))

    def fork(
        self, session_id: str, *, at_seq: int | None = None, fork_id: str | None = None
    ) -> m.Session:
        """Makes a new session whose log is a copy of this one's through seq ``at_seq`` (its
        last event when ``None``): a turn open there is closed, pending input is cancelled.
        The fork has the source's model, system prompt and tools, the id ``fork_id`` (a fresh
        one when ``None``) and ``forked_from``; the source is not touched. Raises
        ``seq-not-logged`` (409) for a seq the log does not have yet and ``session-conflict``
        (409) for a ``fork_id`` that exists."""
        return self._do(api.fork(session_id, at_seq, fork_id))

    # Owned runs

    def run(
        self,
        content: Content,
        *,
        session_id: str | None = None,
        delivery: m.Delivery | None = None,
        model: str | None = None,
        system: str | None = None,
        timeout_ms: int | None = None,
    ) -> m.RunResult:
        """Sends a message and waits until the agent is idle again; returns what it did.

        Without ``session_id`` the run is in a new session (made with ``model`` and
        ``system``); with one, the message goes to that session as ``delivery``. With
        ``timeout_ms`` a run not done in time raises ``AirlockError`` 504 ``run-timeout``
        (the agent keeps working).
        """
        return self._do(api.run(content, session_id, delivery, model, system, timeout_ms))

    # Goals

    def set_goal(self, session_id: str, objective: str, *, max_rounds: int | None = None) -> m.Goal:
        """Gives the session a goal (replacing any), worked on in rounds while the session is
        otherwise idle, at most ``max_rounds`` (default 10)."""
        return self._do(api.set_goal(session_id, objective, max_rounds))

    def get_goal(self, session_id: str) -> m.Goal:
        """Returns the session's goal; ``goal-not-found`` (404) when it has none."""
        return self._do(api.get_goal(session_id))

    def pause_goal(self, session_id: str) -> m.Goal:
        """Pauses an active goal: no more rounds until resumed."""
        return self._do(api.goal_action(session_id, "pause"))

    def resume_goal(self, session_id: str) -> m.Goal:
        """Makes a paused (or active) goal active again, with rounds running in this gateway."""
        return self._do(api.goal_action(session_id, "resume"))

    def complete_goal(self, session_id: str) -> m.Goal:
        """Marks the goal complete: no more rounds."""
        return self._do(api.goal_action(session_id, "complete"))

    def clear_goal(self, session_id: str) -> None:
        """Removes the session's goal."""
        self._do(api.clear_goal(session_id))

    # Observation

    def event_page(
        self, session_id: str, *, after: int | None = None, limit: int | None = None
    ) -> m.EventPage:
        """Returns one page of the log (up to ``limit``, default 500) after seq ``after``."""
        return self._do(api.event_page(session_id, after, limit))

    def events(self, session_id: str, *, after: int | None = None) -> EventStream[m.Event]:
        """Follows the session's log: every event after seq ``after`` (from the start when
        ``None``), then live ones, for as long as the caller iterates.

        A dropped connection (a gateway restart, a network hiccup) is reconnected with backoff
        and resumes after the last seq seen, so each event comes exactly once, in order. It
        ends only when closed, or after the whole log of a disposed session. Failing to
        connect the first time, or a refusal such as ``session-not-found``, raises
        ``AirlockError``.
        """
        follower = Follower(session_id, after)
        return EventStream(self._follow(follower), follower, only_events)

    def frames(self, session_id: str, *, after: int | None = None) -> EventStream[m.Frame]:
        """Like ``events()``, with the live notices between the events: ``StatusChange``
        (idle/running; one on every connection), ``QueueChange`` and ``Notice`` (subagents)."""
        follower = Follower(session_id, after)
        return EventStream(self._follow(follower), follower, lambda _: True)

    def _follow(self, follower: Follower) -> Iterator[m.Frame]:
        """The frames of the session's stream, across reconnects, until ``follower`` is done;
        ``Follower`` decides what each connection's end leads to."""
        path = api.events_path(follower.session_id)
        while not follower.done:
            try:
                with self._http.stream(
                    "GET", path, headers=follower.headers(), timeout=STREAM_TIMEOUT
                ) as response:
                    if response.is_success:
                        follower.opened()
                        for sse in EventSource(response).iter_sse():
                            yield from follower.decode(sse)
                        follower.ended()
                    else:
                        response.read()
                        follower.refused(response)
            except httpx.TransportError as exc:
                follower.dropped(exc)
            if follower.asking:
                try:
                    follower.learned(self.get_session(follower.session_id))
                except AirlockError as error:
                    follower.not_learned(error)
            time.sleep(follower.next_delay())
