"""Python client of the Airlock gateway's HTTP/SSE API.

>>> from airlock_client import Airlock
>>> Airlock("http://127.0.0.1:7700").run("hello").final_response

``Airlock`` blocks; ``AsyncAirlock`` is the same API for asyncio. Refusals raise
``AirlockError``; answers are the dataclasses below. See docs/http-api.md in the Airlock
repository for the gateway's side.
"""

from ._async import AsyncAirlock
from ._content import image_block, text_block
from ._errors import AirlockError
from ._models import (
    Delivery,
    Event,
    EventPage,
    Frame,
    Goal,
    GoalReason,
    Notice,
    QueueChange,
    QueueItem,
    Receipt,
    RunResult,
    SendReceipt,
    Session,
    SessionPage,
    SessionStatus,
    StatusChange,
    Tool,
    Usage,
)
from ._protocol import Content
from ._stream import AsyncEventStream, EventStream
from ._sync import Airlock
from ._version import __version__

__all__ = [
    "Airlock",
    "AirlockError",
    "AsyncAirlock",
    "AsyncEventStream",
    "Content",
    "Delivery",
    "Event",
    "EventPage",
    "EventStream",
    "Frame",
    "Goal",
    "GoalReason",
    "Notice",
    "QueueChange",
    "QueueItem",
    "Receipt",
    "RunResult",
    "SendReceipt",
    "Session",
    "SessionPage",
    "SessionStatus",
    "StatusChange",
    "Tool",
    "Usage",
    "__version__",
    "image_block",
    "text_block",
]
