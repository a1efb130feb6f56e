"""Expecting a call to be refused with a given status and code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from airlock_client import AirlockError


@contextmanager
def refused(status: int | None, code: str) -> Iterator[pytest.ExceptionInfo[AirlockError]]:
    """Expects the block to raise `AirlockError` with `status` and `code`; yields what
    `pytest.raises` does, for checking the rest of the error after the block."""
    with pytest.raises(AirlockError) as raised:
        yield raised
    error = raised.value
    # A message of its own: pytest rewrites the asserts of test modules, not of this helper.
    assert (error.status, error.code) == (status, code), f"not {status} {code} but {error}"
