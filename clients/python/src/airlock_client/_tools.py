"""Builders for the tools a session offers: approval policies and client tools."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._models import Approval


def tool_policy(name: str, approval: Approval) -> dict[str, Any]:
    """A gateway tool with an approval policy, for ``create_session(tools=...)``: with
    ``always`` each call waits for ``approve`` or ``deny``; ``never`` overrides the gateway's
    ``--approval-for`` and the plugin's own default."""
    return {"name": name, "approval": approval}


def client_tool(
    name: str,
    *,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """A tool the client runs, for ``create_session(client_tools=...)``: the model may call it
    like any other, and each call waits until the client posts its result
    (``post_tool_result``) or ``timeout_ms`` passes (10 minutes by default; at most a day).

    ``name`` is 1 to 64 letters, digits, ``_`` or ``-``, and no gateway tool's; ``parameters``
    is the JSON Schema of its arguments (``{"type": "object"}`` when absent).
    """
    tool: dict[str, Any] = {"name": name}
    if description is not None:
        tool["description"] = description
    if parameters is not None:
        tool["parameters"] = dict(parameters)
    if timeout_ms is not None:
        tool["timeoutMs"] = timeout_ms
    return tool
