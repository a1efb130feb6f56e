"""The one exception the client raises for a refused request or an unreachable gateway."""

from __future__ import annotations

from typing import Any

import httpx


class AirlockError(Exception):
    """The gateway refused a request, or could not be reached.

    ``status`` is the HTTP status (``None`` when no answer came), ``code`` the gateway's error
    code (``session-not-found``, ``idempotency-conflict``, …; see docs/http-api.md), ``message``
    its human-readable explanation and ``details`` the extra fields it gave (``{}`` when none).
    ``retry_after`` is the ``Retry-After`` header in seconds, when the answer had one.
    """

    def __init__(
        self,
        status: int | None,
        code: str,
        message: str,
        details: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status or 'no answer'} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = details or {}
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[type[AirlockError], tuple[Any, ...]]:
        # Pickled (to another process, say) with the fields, not the formatted text.
        return (type(self), (self.status, self.code, self.message, self.details, self.retry_after))

    @classmethod
    def from_response(cls, response: httpx.Response) -> AirlockError:
        """Reads the ``{"error": {code, message, details}}`` body of a refused request."""
        retry_after = _seconds(response.headers.get("retry-after"))
        try:
            error = response.json()["error"]
            return cls(
                response.status_code,
                str(error["code"]),
                str(error.get("message", "")),
                dict(error.get("details") or {}),
                retry_after,
            )
        except (ValueError, KeyError, TypeError):
            # Not the gateway's error shape (a proxy in between, say): keep what there is.
            try:
                text = response.text[:500]
            except httpx.ResponseNotRead:
                text = ""
            return cls(response.status_code, "unexpected-response", text, {}, retry_after)

    @classmethod
    def from_transport(cls, exc: httpx.TransportError) -> AirlockError:
        """Wraps a connection failure or timeout (no HTTP answer) as ``connection-error``."""
        return cls(None, "connection-error", f"{type(exc).__name__}: {exc}")


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None
