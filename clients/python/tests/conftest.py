"""Fixtures: a real gateway per test (its own temp dir, port and data file), clients of it, and
a gateway whose `openai:held` model can keep a turn running (see `_held_model.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _gateway import Gateway
from _held_model import HeldModel

from airlock_client import Airlock


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def gateway(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Gateway]:
    """The test's gateway, with the environment of its `gateway_env` mark (if any) added."""
    mark = request.node.get_closest_marker("gateway_env")
    gateway = Gateway(tmp_path, env=mark.args[0] if mark else None).start()
    yield gateway
    gateway.kill()


@pytest.fixture
def airlock(gateway: Gateway) -> Iterator[Airlock]:
    with Airlock(gateway.url) as client:
        yield client


@pytest.fixture
def held_model() -> Iterator[HeldModel]:
    model = HeldModel()
    yield model
    model.close()


@pytest.fixture
def held_airlock(tmp_path: Path, held_model: HeldModel) -> Iterator[Airlock]:
    """A client of a gateway whose sessions may use the model `openai:held`."""
    gateway = Gateway(tmp_path, env={"AIRLOCK_BASE_URL": held_model.base_url}).start()
    with Airlock(gateway.url) as client:
        yield client
    held_model.release()
    gateway.kill()
