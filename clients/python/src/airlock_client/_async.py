"""``AsyncAirlock``: the asyncio client, call for call the same as ``Airlock``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx
from httpx_sse import EventSource

from . import _hooks as hooks
from . import _models as m
from . import _protocol as api
from ._errors import AirlockError
from ._hooks import Schedule, Webhook
from ._protocol import Content, ToolChoice
from ._stream import STREAM_TIMEOUT, AsyncEventStream, Follower, only_events
from ._sync import DEFAULT_URL

T = TypeVar("T")


class AsyncAirlock:
    """An asyncio client of one Airlock gateway; see ``Airlock`` for what each call does.

    Close it with ``await aclose()`` or use ``async with``.

    >>> async with AsyncAirlock("http://127.0.0.1:7700") as airlock:
    ...     result = await airlock.run("hello")
    """

    def __init__(
        self, base_url: str = DEFAULT_URL, api_key: str | None = None, *, timeout: float = 30.0
    ) -> None:
        headers = api.client_headers(api_key)
        self._http = httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout)

    async def aclose(self) -> None:
        """Closes the client's connections."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncAirlock:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _do(self, call: api.Call[T]) -> T:
        try:
            response = await self._http.request(call.method, call.path, **api.request_args(call))
        except httpx.TransportError as exc:
            raise AirlockError.from_transport(exc) from exc
        return api.answer(call, response)

    # Sessions

    async def create_session(
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
        """Creates a session (or returns the existing one with the same settings); ``tools``
        may carry approval policies, ``client_tools`` are tools the client runs, ``budget``
        caps what its responses spend."""
        return await self._do(
            api.create_session(
                session_id, model, system, tools, client_tools, metadata, fallback, budget
            )
        )

    async def get_session(self, session_id: str) -> m.Session:
        """Returns a session: its status, last seq, pending counts, model and goal."""
        return await self._do(api.get_session(session_id))

    async def list_sessions(
        self, *, cursor: str | None = None, limit: int | None = None
    ) -> m.SessionPage:
        """Returns a page of sessions, ordered by id."""
        return await self._do(api.list_sessions(cursor, limit))

    async def session_status(self, session_id: str) -> m.SessionStatus:
        """Returns whether the session is ``idle`` or ``running``, and its last seq."""
        return await self._do(api.session_status(session_id))

    async def session_usage(self, session_id: str) -> m.Spending:
        """Returns what the session's own responses spent (steps and compaction summaries)."""
        return await self._do(api.session_usage(session_id))

    async def usage(self, *, since: int | None = None) -> m.Spending:
        """Returns what the key's tenant spent since ``since`` (ms since the epoch); with an
        admin key, every tenant's."""
        return await self._do(api.usage(since))

    async def budget(self, session_id: str) -> m.BudgetState:
        """Returns the session's budget (``None``: it has none), what it spent (the tokens and
        cost ``session_usage`` counts) and whether the budget holds it paused."""
        return await self._do(api.budget(session_id))

    async def set_budget(
        self, session_id: str, *, tokens: int | None = None, cost_usd: float | None = None
    ) -> m.BudgetState:
        """Replaces the session's budget whole: at most ``tokens`` tokens and ``cost_usd`` US
        dollars; a limit left ``None`` is no limit, so with neither the budget is removed.
        Returns the state after the change: a paused session whose new budget is not spent
        resumes where it stopped (``paused`` is then ``False``)."""
        return await self._do(api.set_budget(session_id, tokens, cost_usd))

    # Files

    async def files(self, session_id: str) -> m.Files:
        """Lists the session's workspace: the files its code tools (``python``,
        ``javascript``) wrote and those uploaded for them."""
        return await self._do(api.files(session_id))

    async def download_file(self, session_id: str, path: str) -> bytes:
        """Returns the bytes of the workspace file at ``path`` (``out/plot.png``)."""
        return await self._do(api.download_file(session_id, path))

    async def upload_file(self, session_id: str, path: str, data: bytes) -> m.WorkspaceFile:
        """Puts ``data`` in the session's workspace at ``path`` (making its directories,
        replacing a file there) for its code to read; bounded by the gateway's body limit and
        the tenant's workspace quota (``workspace-full``)."""
        return await self._do(api.upload_file(session_id, path, data))

    async def remove_file(self, session_id: str, path: str) -> None:
        """Removes the workspace file at ``path``."""
        await self._do(api.remove_file(session_id, path))

    # Webhooks

    async def create_webhook(
        self, url: str, events: Sequence[str], *, session_id: str | None = None
    ) -> Webhook:
        """Subscribes ``url`` to ``events`` (``WEBHOOK_EVENTS``) of the tenant's sessions, or
        of ``session_id`` alone. The answer's ``secret`` (shown only now) verifies each delivery
        (``verify_webhook``)."""
        return await self._do(hooks.create_webhook(url, events, session_id))

    async def webhooks(self) -> list[Webhook]:
        """Returns the tenant's webhook subscriptions, oldest first."""
        return await self._do(hooks.webhooks())

    async def webhook(self, webhook_id: str) -> Webhook:
        """Returns one subscription: whether it is failing and why, what it delivered."""
        return await self._do(hooks.webhook(webhook_id))

    async def delete_webhook(self, webhook_id: str) -> None:
        """Deletes a subscription and the deliveries waiting for it."""
        await self._do(hooks.delete_webhook(webhook_id))

    async def resume_webhook(self, webhook_id: str) -> Webhook:
        """Takes a failing subscription back: what is logged from now on is delivered."""
        return await self._do(hooks.resume_webhook(webhook_id))

    # Schedules

    async def create_schedule(
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
        return await self._do(call)

    async def schedules(self) -> list[Schedule]:
        """Returns the tenant's schedules, oldest first."""
        return await self._do(hooks.schedules())

    async def schedule(self, schedule_id: str) -> Schedule:
        """Returns one schedule: its next due time and what it did."""
        return await self._do(hooks.schedule(schedule_id))

    async def delete_schedule(self, schedule_id: str) -> None:
        """Deletes a schedule (the sessions it made stay)."""
        await self._do(hooks.delete_schedule(schedule_id))

    async def pause_schedule(self, schedule_id: str) -> Schedule:
        """Pauses a schedule: it sends nothing until resumed."""
        return await self._do(hooks.pause_schedule(schedule_id))

    async def resume_schedule(self, schedule_id: str) -> Schedule:
        """Resumes a schedule from its first due time after now."""
        return await self._do(hooks.resume_schedule(schedule_id))

    async def children(self, session_id: str) -> list[m.Session]:
        """Returns the subagent sessions the session started, oldest first."""
        return await self._do(api.children(session_id))

    async def set_metadata(self, session_id: str, metadata: Any) -> m.Session:
        """Replaces what the session keeps as ``metadata``; see ``Airlock.set_metadata``."""
        return await self._do(api.set_metadata(session_id, metadata))

    async def dispose_session(self, session_id: str) -> None:
        """Disposes of a session; its log and receipts stay readable."""
        await self._do(api.dispose_session(session_id))

    async def tools(self) -> list[m.Tool]:
        """Returns the tools the gateway offers to models."""
        return await self._do(api.tools())

    # Input

    async def send(
        self,
        session_id: str,
        content: Content,
        *,
        delivery: m.Delivery | None = None,
        idempotency_key: str | None = None,
    ) -> m.SendReceipt:
        """Queues a message and returns once it is durable: ``{message_id, seq}``."""
        return await self._do(api.send(session_id, content, delivery, idempotency_key))

    async def receipt(self, session_id: str, message_id: str) -> m.Receipt:
        """Returns where a sent message is: ``pending``, ``claimed`` or ``canceled``."""
        return await self._do(api.receipt(session_id, message_id))

    async def queue(self, session_id: str) -> list[m.QueueItem]:
        """Returns the session's pending messages, ``next-step`` items first."""
        return await self._do(api.queue(session_id))

    async def edit_queued(self, session_id: str, message_id: str, content: Content) -> None:
        """Replaces the content of a pending message."""
        await self._do(api.edit_queued(session_id, message_id, content))

    async def remove_queued(self, session_id: str, message_id: str) -> None:
        """Removes a pending message from the queue."""
        await self._do(api.remove_queued(session_id, message_id))

    async def steer_queued(self, session_id: str, message_id: str) -> None:
        """Turns a queued followup into steering for the running turn."""
        await self._do(api.steer_queued(session_id, message_id))

    async def cancel(self, session_id: str, *, keep_inbox: bool = True) -> None:
        """Cancels the running turn, keeping (or with ``keep_inbox=False`` clearing) the
        queue."""
        await self._do(api.cancel(session_id, keep_inbox))

    async def compact(self, session_id: str) -> None:
        """Starts summarizing an idle session's conversation."""
        await self._do(api.compact(session_id))

    # A person in the loop

    async def tool_calls(self, session_id: str) -> list[m.WaitingCall]:
        """Returns the calls of the running step that wait for an approval or a client's
        result."""
        return await self._do(api.tool_calls(session_id))

    async def approve(self, session_id: str, call_id: str) -> None:
        """Approves a call that waits for a person; it runs now."""
        await self._do(api.approve(session_id, call_id))

    async def deny(self, session_id: str, call_id: str, reason: str | None = None) -> None:
        """Denies a call that waits for a person; the model sees ``DENIED_BY_USER``."""
        await self._do(api.deny(session_id, call_id, reason))

    async def post_tool_result(
        self, session_id: str, call_id: str, content: Content, is_error: bool = False
    ) -> None:
        """Answers a client tool's call with its result."""
        await self._do(api.post_tool_result(session_id, call_id, content, is_error))

    async def fork(
        self, session_id: str, *, at_seq: int | None = None, fork_id: str | None = None
    ) -> m.Session:
        """Makes a new session from a copy of this one's log through seq ``at_seq``."""
        return await self._do(api.fork(session_id, at_seq, fork_id))

    # Owned runs

    async def run(
        self,
        content: Content,
        *,
        session_id: str | None = None,
        delivery: m.Delivery | None = None,
        model: str | None = None,
        system: str | None = None,
        timeout_ms: int | None = None,
    ) -> m.RunResult:
        """Sends a message (in a new session, or in ``session_id``) and waits until the agent is
        idle again; returns what it did."""
        return await self._do(api.run(content, session_id, delivery, model, system, timeout_ms))

    # Goals

    async def set_goal(
        self, session_id: str, objective: str, *, max_rounds: int | None = None
    ) -> m.Goal:
        """Gives the session a goal (replacing any), worked on in rounds."""
        return await self._do(api.set_goal(session_id, objective, max_rounds))

    async def get_goal(self, session_id: str) -> m.Goal:
        """Returns the session's goal; ``goal-not-found`` (404) when it has none."""
        return await self._do(api.get_goal(session_id))

    async def pause_goal(self, session_id: str) -> m.Goal:
        """Pauses an active goal."""
        return await self._do(api.goal_action(session_id, "pause"))

    async def resume_goal(self, session_id: str) -> m.Goal:
        """Makes a paused (or active) goal active again."""
        return await self._do(api.goal_action(session_id, "resume"))

    async def complete_goal(self, session_id: str) -> m.Goal:
        """Marks the goal complete."""
        return await self._do(api.goal_action(session_id, "complete"))

    async def clear_goal(self, session_id: str) -> None:
        """Removes the session's goal."""
        await self._do(api.clear_goal(session_id))

    # Observation

    async def event_page(
        self, session_id: str, *, after: int | None = None, limit: int | None = None
    ) -> m.EventPage:
        """Returns one page of the log after seq ``after``."""
        return await self._do(api.event_page(session_id, after, limit))

    def events(self, session_id: str, *, after: int | None = None) -> AsyncEventStream[m.Event]:
        """Follows the session's log after seq ``after``, reconnecting as needed; see
        ``Airlock.events``. Use with ``async for``."""
        follower = Follower(session_id, after)
        return AsyncEventStream(self._follow(follower), follower, only_events)

    def frames(self, session_id: str, *, after: int | None = None) -> AsyncEventStream[m.Frame]:
        """Like ``events()``, with the live notices between the events."""
        follower = Follower(session_id, after)
        return AsyncEventStream(self._follow(follower), follower, lambda _: True)

    async def _follow(self, follower: Follower) -> AsyncIterator[m.Frame]:
        """``Airlock._follow`` for asyncio."""
        path = api.events_path(follower.session_id)
        while not follower.done:
            try:
                async with self._http.stream(
                    "GET", path, headers=follower.headers(), timeout=STREAM_TIMEOUT
                ) as response:
                    if response.is_success:
                        follower.opened()
                        async for sse in EventSource(response).aiter_sse():
                            for frame in follower.decode(sse):
                                yield frame
                        follower.ended()
                    else:
                        await response.aread()
                        follower.refused(response)
            except httpx.TransportError as exc:
                follower.dropped(exc)
            if follower.asking:
                try:
                    follower.learned(await self.get_session(follower.session_id))
                except AirlockError as error:
                    follower.not_learned(error)
            await asyncio.sleep(follower.next_delay())
