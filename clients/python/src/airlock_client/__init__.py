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
from ._hooks import (
    WEBHOOK_EVENTS,
    Schedule,
    Webhook,
    WebhookVerificationError,
    verify_webhook,
)
from ._models import (
    Approval,
    Budget,
    BudgetPause,
    BudgetState,
    Delivery,
    Event,
    EventPage,
    Files,
    ForkedFrom,
    Frame,
    Goal,
    GoalReason,
    ModelSpending,
    Notice,
    QueueChange,
    QueueItem,
    Receipt,
    RunResult,
    SendReceipt,
    Session,
    SessionPage,
    SessionStatus,
    Spending,
    Spent,
    StatusChange,
    Tool,
    Usage,
    WaitingCall,
    WorkspaceFile,
)
from ._protocol import BudgetLimits, Content, ToolChoice
from ._stream import AsyncEventStream, EventStream
from ._sync import Airlock
from ._tools import client_tool, tool_policy
from ._version import __version__

__all__ = [
    "Airlock",
    "AirlockError",
    "Approval",
    "AsyncAirlock",
    "AsyncEventStream",
    "Budget",
    "BudgetLimits",
    "BudgetPause",
    "BudgetState",
    "Content",
    "Delivery",
    "Event",
    "EventPage",
    "EventStream",
    "Files",
    "ForkedFrom",
    "Frame",
    "Goal",
    "GoalReason",
    "ModelSpending",
    "Notice",
    "QueueChange",
    "QueueItem",
    "Receipt",
    "RunResult",
    "Schedule",
    "SendReceipt",
    "Session",
    "SessionPage",
    "SessionStatus",
    "Spending",
    "Spent",
    "StatusChange",
    "Tool",
    "ToolChoice",
    "Usage",
    "WEBHOOK_EVENTS",
    "WaitingCall",
    "Webhook",
    "WebhookVerificationError",
    "WorkspaceFile",
    "__version__",
    "client_tool",
    "image_block",
    "text_block",
    "tool_policy",
    "verify_webhook",
]
