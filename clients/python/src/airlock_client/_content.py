"""Builders for content blocks, for messages that are more than one string."""

from __future__ import annotations

import base64
from typing import Any


def text_block(text: str) -> dict[str, Any]:
    """A ``text`` content block."""
    return {"type": "text", "text": text}


def image_block(data: bytes, media_type: str) -> dict[str, Any]:
    """An ``image`` content block from raw bytes; ``media_type`` is ``image/png``,
    ``image/jpeg``, ``image/gif`` or ``image/webp``."""
    return {"type": "image", "mediaType": media_type, "data": base64.b64encode(data).decode()}
