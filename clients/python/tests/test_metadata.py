"""A session's metadata: kept from its create, shown in its view, replaced whole by
``set_metadata`` (``None`` keeps nothing)."""

from __future__ import annotations

import pytest
from _gateway import Gateway

from airlock_client import Airlock, AsyncAirlock


def test_set_metadata_replaces_it_whole_and_none_keeps_nothing(airlock: Airlock) -> None:
    session = airlock.create_session(metadata={"title": "Draft", "project": 7})
    assert session.metadata == {"title": "Draft", "project": 7}
    changed = airlock.set_metadata(session.session_id, {"title": "Launch plan"})
    assert changed.metadata == {"title": "Launch plan"}
    assert airlock.get_session(session.session_id).metadata == {"title": "Launch plan"}
    assert airlock.set_metadata(session.session_id, None).metadata is None


@pytest.mark.anyio
async def test_set_metadata_of_the_async_client(gateway: Gateway) -> None:
    async with AsyncAirlock(gateway.url) as airlock:
        session = await airlock.create_session()
        assert session.metadata is None
        changed = await airlock.set_metadata(session.session_id, ["any", "json"])
        assert changed.metadata == ["any", "json"]
