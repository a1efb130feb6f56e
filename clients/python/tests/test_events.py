"""`events()` and `frames()`: following a session's log, across dropped connections."""

from __future__ import annotations

import queue
import threading

import anyio
import httpx
import pytest
from _gateway import Gateway
from _streams import auntil, is_status, is_type, seqs, until

from airlock_client import Airlock, AsyncAirlock, Event, QueueChange, StatusChange


def test_events_yields_the_log_then_live_events_in_seq_order(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    airlock.run("hello", session_id=s)
    with airlock.events(s) as events:
        logged = until(events, is_type("turn/end"))
        airlock.send(s, "more")
        live = until(events, is_type("turn/end"))
        assert events.last_seq == live[-1].seq
    assert seqs(logged + live) == list(range(len(logged) + len(live)))
    assert all(isinstance(e, Event) for e in logged + live)
    assert any(e.type == "user/message" and e.text == "more" for e in live)


def test_events_after_a_seq_starts_right_after_it(airlock: Airlock) -> None:
    result = airlock.run("hello")
    with airlock.events(result.session_id, after=4) as events:
        assert next(events).seq == 5


def test_frames_carry_status_changes_around_a_turn(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    with airlock.frames(s) as frames:
        assert next(frames) == StatusChange(s, "idle")
        airlock.send(s, "hello")
        turn = until(frames, is_status("idle"))
    # The canonical order of docs/events.md: the insert, status running, the turn, status idle.
    names = [
        f.type if isinstance(f, Event) else f.status for f in turn if not isinstance(f, QueueChange)
    ]
    assert names[:3] == ["agent/inbox/spliced", "running", "turn/start"]
    assert names[-2:] == ["turn/end", "idle"]


def test_events_of_a_disposed_session_end_after_its_whole_log(airlock: Airlock) -> None:
    result = airlock.run("hello")
    airlock.dispose_session(result.session_id)
    with airlock.events(result.session_id) as events:
        assert [e.seq for e in events] == list(range(result.last_seq + 1))


def test_event_page_returns_a_slice_of_the_log(airlock: Airlock) -> None:
    result = airlock.run("hello")
    page = airlock.event_page(result.session_id, after=2, limit=3)
    assert [e.seq for e in page.events] == [3, 4, 5]
    assert (page.next_after, page.has_more, page.last_seq) == (5, True, result.last_seq)


def test_event_pages_of_an_empty_log_can_be_followed_from_next_after(airlock: Airlock) -> None:
    s = airlock.create_session().session_id
    empty = airlock.event_page(s)
    assert (empty.events, empty.last_seq, empty.next_after) == ([], -1, -1)
    airlock.run("hello", session_id=s)
    assert airlock.event_page(s, after=empty.next_after, limit=1).events[0].seq == 0


def _assert_every_seq_once_in_order(events: list[Event], airlock: Airlock, session: str) -> None:
    log = airlock.event_page(session, limit=5000).events
    assert seqs(events) == list(range(len(events)))
    assert [(e.seq, e.type) for e in events] == [(e.seq, e.type) for e in log]


def _again_answered(seen: list[Event]):
    """Done once the turn that took the message "again" has ended."""

    def done(event: Event) -> bool:
        seen.append(event)
        if event.type != "turn/end":
            return False
        return any(e.type == "user/message" and e.text == "again" for e in seen)

    return done


class Attempts:
    """Counts the event-stream connections a client opens, through the request hook of its
    httpx client, so a test can wait until the stream has tried (and failed) to reach a dead
    gateway before bringing it back."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = threading.Condition()

    def watch(self, airlock: Airlock) -> None:
        airlock._http.event_hooks = {"request": [self._hook], "response": []}

    def _hook(self, request: httpx.Request) -> None:
        if request.url.path.endswith("/events"):
            with self._changed:
                self.count += 1
                self._changed.notify_all()

    def wait_for(self, count: int) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self.count >= count)


class AsyncAttempts:
    """`Attempts` for an async client."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = anyio.Event()

    def watch(self, airlock: AsyncAirlock) -> None:
        airlock._http.event_hooks = {"request": [self._hook], "response": []}

    async def _hook(self, request: httpx.Request) -> None:
        if request.url.path.endswith("/events"):
            self.count += 1
            self._changed.set()
            self._changed = anyio.Event()

    async def wait_for(self, count: int) -> None:
        while self.count < count:
            await self._changed.wait()


def test_events_resume_across_a_gateway_restart_with_no_gap_and_no_duplicate(
    gateway: Gateway, airlock: Airlock
) -> None:
    s = airlock.create_session().session_id
    airlock.run("hello", session_id=s)
    attempts = Attempts()
    attempts.watch(airlock)
    received: queue.Queue[Event | BaseException] = queue.Queue()
    read_some = threading.Event()

    def follow() -> None:
        """Reads until the turn for "again" ended, on its own thread so the stream is waiting
        (and then reconnecting) while the gateway is killed and comes back."""
        seen: list[Event] = []
        try:
            with airlock.events(s) as events:
                done = _again_answered(seen)
                for event in events:
                    received.put(event)
                    if event.seq == 5:
                        read_some.set()
                    if done(event):
                        return
        except BaseException as error:  # handed to the test thread
            received.put(error)
        finally:
            read_some.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    read_some.wait()
    gateway.kill()
    # The first connection, then one to the dead gateway, then another after it failed.
    attempts.wait_for(3)
    gateway.start()
    airlock.send(s, "again")
    reader.join()

    events = []
    while not received.empty():
        item = received.get()
        if isinstance(item, BaseException):
            raise item
        events.append(item)
    assert events[-1].type == "turn/end"
    _assert_every_seq_once_in_order(events, airlock, s)


@pytest.mark.anyio
async def test_async_events_resume_across_a_gateway_restart_with_no_gap_and_no_duplicate(
    gateway: Gateway,
) -> None:
    async with AsyncAirlock(gateway.url) as airlock:
        s = (await airlock.create_session()).session_id
        await airlock.run("hello", session_id=s)
        attempts = AsyncAttempts()
        attempts.watch(airlock)
        events: list[Event] = []
        read_some = anyio.Event()

        async def follow() -> None:
            seen: list[Event] = []
            async with airlock.events(s) as stream:
                done = _again_answered(seen)
                async for event in stream:
                    events.append(event)
                    if event.seq == 5:
                        read_some.set()
                    if done(event):
                        return

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(follow)
            await read_some.wait()
            gateway.kill()
            await attempts.wait_for(3)
            await anyio.to_thread.run_sync(gateway.start)
            await airlock.send(s, "again")

        with Airlock(gateway.url) as sync:
            _assert_every_seq_once_in_order(events, sync, s)


@pytest.mark.anyio
async def test_async_frames_follow_a_turn(gateway: Gateway) -> None:
    async with AsyncAirlock(gateway.url) as airlock:
        s = (await airlock.create_session()).session_id
        async with airlock.frames(s) as frames:
            assert await frames.__anext__() == StatusChange(s, "idle")
            await airlock.send(s, "hello")
            turn = await auntil(frames, is_status("idle"))
        assert [e.type for e in turn if isinstance(e, Event)][-1] == "turn/end"
