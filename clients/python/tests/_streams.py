"""Reading a stream up to the frame a test waits for (instead of sleeping)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

from airlock_client import Event, Frame, StatusChange

T = TypeVar("T")

HELD = "openai:held"


def until(stream: Iterator[T], done: Callable[[T], bool]) -> list[T]:
    """The items of `stream` up to and including the first one that is `done`."""
    seen = []
    for item in stream:
        seen.append(item)
        if done(item):
            return seen
    raise AssertionError(f"the stream ended before what was awaited; it gave {seen}")


async def auntil(stream: AsyncIterator[T], done: Callable[[T], bool]) -> list[T]:
    """`until` for an async stream."""
    seen = []
    async for item in stream:
        seen.append(item)
        if done(item):
            return seen
    raise AssertionError(f"the stream ended before what was awaited; it gave {seen}")


def is_type(kind: str) -> Callable[[Frame], bool]:
    """A log event of type `kind`."""
    return lambda frame: isinstance(frame, Event) and frame.type == kind


def is_status(status: str) -> Callable[[Frame], bool]:
    return lambda frame: isinstance(frame, StatusChange) and frame.status == status


def approval_requested(frame: Frame) -> bool:
    """A tool call waits for a person's approval."""
    return (
        isinstance(frame, Event)
        and frame.type == "tool/approval"
        and frame.data["state"] == "requested"
    )


def client_call(frame: Frame) -> bool:
    """A client tool's call waits for the client's result."""
    return (
        isinstance(frame, Event) and frame.type == "tool/call" and frame.data.get("client") is True
    )


def first_chunk(frame: Frame) -> bool:
    """The model began answering: its turn is running, in a step."""
    return is_type("assistant/chunk")(frame)


def seqs(frames: list[Frame]) -> list[int]:
    return [f.seq for f in frames if isinstance(f, Event)]
