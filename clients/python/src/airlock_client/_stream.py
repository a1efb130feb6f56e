"""Following a session's event stream across dropped connections.

``Follower`` holds what the sync and async loops share: the cursor (the last seq seen, sent as
``Last-Event-ID`` on every reconnect), the backoff between attempts, which failures are worth
another attempt, when a stream that ended is over (its session is disposed), and the decoding of
SSE frames. ``EventStream`` and ``AsyncEventStream`` are what ``events()`` and ``frames()`` hand
to the caller.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import httpx
from httpx_sse import ServerSentEvent

from ._errors import AirlockError
from ._models import Event, Frame, Notice, QueueChange, QueueItem, Session, StatusChange

T = TypeVar("T")

FIRST_DELAY_S = 0.1
MAX_DELAY_S = 5.0

# The gateway pings every 15 s; a connection silent for this long is taken as dropped.
STREAM_TIMEOUT = httpx.Timeout(30.0, read=60.0)

# Answers that may go away on their own: the gateway is busy, stopping, or over a quota.
_RETRYABLE_STATUSES = {408, 429, 500, 502, 503, 504}


class Follower:
    """The state of one followed session stream, between and across connections."""

    def __init__(self, session_id: str, after: int | None) -> None:
        self.session_id = session_id
        self.last_seq = -1 if after is None else after
        self.connected = False
        # Set once the session is known to be disposed: its stream sends the rest of the log
        # and ends, and that end is the iterator's end (``done``).
        self._final = False
        self.done = False
        # Set when a stream ended by itself and the loop is to ask whether the session was
        # disposed (``learned``) before it reconnects.
        self.asking = False
        self._delay = FIRST_DELAY_S
        self._retry_after: float | None = None
        # The inbox lists, once a ``session.queue`` frame listed them: the gateway sends the queue
        # once where the log read meets the live events, and every later change as an
        # ``agent/inbox/spliced`` event, which is applied here.
        self._queue: dict[str, list[QueueItem]] | None = None

    def headers(self) -> dict[str, str]:
        """The request headers for the next connection: resume after the last seq seen."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        if self.last_seq >= 0:
            headers["Last-Event-ID"] = str(self.last_seq)
        return headers

    def opened(self) -> None:
        """A connection was accepted: the next failure starts the backoff afresh."""
        self.connected = True
        self._delay = FIRST_DELAY_S

    def refused(self, response: httpx.Response) -> None:
        """A connection answered with an error (its body read): raise it unless it may pass on
        its own."""
        error = AirlockError.from_response(response)
        if error.status not in _RETRYABLE_STATUSES:
            raise error
        self._retry_after = error.retry_after

    def dropped(self, exc: httpx.TransportError) -> None:
        """The connection failed or broke. Before the first connection this is a wrong
        address or a gateway that is not running, so it is raised; later it is retried."""
        if not self.connected:
            raise AirlockError.from_transport(exc) from exc

    def ended(self) -> None:
        """The stream ended by itself. For a session known to be disposed that is the end of
        its log, and the iteration is ``done``; otherwise the session may have just been
        disposed, or the gateway be stopping, and the loop is ``asking`` which."""
        if self._final:
            self.done = True
        else:
            self.asking = True

    def learned(self, session: Session) -> None:
        """The session, as the gateway described it after its stream ended. A disposed one is
        reconnected to at once, to read the rest of its log and end."""
        self.asking = False
        if session.disposed:
            self._final = True
            self._retry_after = 0.0

    def not_learned(self, error: AirlockError) -> None:
        """Asking after the session failed. With no answer or a server error the gateway may
        be stopping, and the stream is reconnected as after a drop; any other error is
        raised."""
        self.asking = False
        if error.status is not None and error.status < 500:
            raise error

    def next_delay(self) -> float:
        """Seconds to wait before the next attempt: none to read the rest of a disposed
        session's log (or once ``done``); else doubling from 0.1 s up to 5 s (a little less,
        at random, so clients do not all come back at once), or what ``Retry-After`` asked
        for."""
        if self.done:
            return 0.0
        if self._retry_after is not None:
            delay, self._retry_after = self._retry_after, None
            return delay
        delay = self._delay * random.uniform(0.75, 1.0)
        self._delay = min(self._delay * 2, MAX_DELAY_S)
        return delay

    def decode(self, sse: ServerSentEvent) -> list[Frame]:
        """The frames an SSE message stands for: none for one to skip (the ``retry:``
        preamble, and any event at or before the cursor); an event, followed by the queue it
        leaves when it is a splice of the inbox."""
        if sse.event == "session.event":
            event = Event.from_json(json.loads(sse.data))
            if event.seq <= self.last_seq:
                return []
            self.last_seq = event.seq
            if event.type == "agent/inbox/spliced" and self._queue is not None:
                return [event, self._splice(event.data)]
            return [event]
        if sse.event == "message" and not sse.data:
            return []
        data: Any = json.loads(sse.data) if sse.data else {}
        if sse.event == "session.status":
            return [StatusChange(data["sessionId"], data["status"])]
        if sse.event == "session.queue":
            items = [QueueItem.from_json(item) for item in data["items"]]
            self._queue = {"next-step": [], "next-turn": []}
            for item in items:
                self._queue.setdefault(item.target, []).append(item)
            return [QueueChange(data["sessionId"], items)]
        return [Notice(sse.event, data if isinstance(data, dict) else {"value": data})]

    def _splice(self, splice: dict[str, Any]) -> QueueChange:
        """Applies one splice to the queue, as ``Array.splice`` on its list; the queue after."""
        assert self._queue is not None
        target = splice["target"]
        inserted = [
            QueueItem(m["id"], target, m.get("source", {}).get("delivery", "inject"), dict(m))
            for m in splice.get("inserted", [])
        ]
        items = self._queue.setdefault(target, [])
        start = splice["start"]
        items[start : start + splice.get("removedCount", 0)] = inserted
        queue = self._queue.get("next-step", []) + self._queue.get("next-turn", [])
        return QueueChange(self.session_id, queue)


def only_events(frame: Frame) -> bool:
    return isinstance(frame, Event)


class _Followed:
    """What both streams keep: the follower, whose cursor is ``last_seq``, and which frames
    to hand on."""

    def __init__(self, follower: Follower, keep: Callable[[Frame], bool]) -> None:
        self._follower = follower
        self._keep = keep

    @property
    def last_seq(self) -> int:
        return self._follower.last_seq


class EventStream(_Followed, Iterator[T]):
    """An endless iterator over a session's stream; it reconnects by itself.

    Iterating blocks until the next item arrives. Stop by leaving the loop and calling
    ``close()``, or use it as a context manager. ``last_seq`` is the seq of the last log
    event yielded (keep it to resume later with ``after=``).
    """

    def __init__(self, frames: Iterator[Frame], follower: Follower, keep: Callable[[Frame], bool]):
        super().__init__(follower, keep)
        self._frames = frames

    def __iter__(self) -> EventStream[T]:
        return self

    def __next__(self) -> T:
        while True:
            frame = next(self._frames)
            if self._keep(frame):
                return frame  # type: ignore[return-value]

    def close(self) -> None:
        """Closes the connection; the iterator ends."""
        close = getattr(self._frames, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> EventStream[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncEventStream(_Followed, AsyncIterator[T]):
    """The async form of ``EventStream``: ``async for``, ``aclose()``, ``async with``."""

    def __init__(
        self, frames: AsyncIterator[Frame], follower: Follower, keep: Callable[[Frame], bool]
    ):
        super().__init__(follower, keep)
        self._frames = frames

    def __aiter__(self) -> AsyncEventStream[T]:
        return self

    async def __anext__(self) -> T:
        while True:
            frame = await self._frames.__anext__()
            if self._keep(frame):
                return frame  # type: ignore[return-value]

    async def aclose(self) -> None:
        """Closes the connection; the iterator ends."""
        aclose = getattr(self._frames, "aclose", None)
        if aclose is not None:
            await aclose()

    async def __aenter__(self) -> AsyncEventStream[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
