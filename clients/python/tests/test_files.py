"""A session's workspace: what a client uploads there is listed, downloaded byte for byte and
removed; a path out of it and a write past the tenant's quota are refused with their codes."""

from __future__ import annotations

import pytest
from _gateway import Gateway
from _refusals import refused

from airlock_client import Airlock, AsyncAirlock, Files, WorkspaceFile


def test_an_uploaded_file_is_listed_downloaded_and_removed(airlock: Airlock) -> None:
    session = airlock.create_session()
    data = bytes(range(256))
    stored = airlock.upload_file(session.session_id, "in/ü data.bin", data)
    assert isinstance(stored, WorkspaceFile)
    assert (stored.path, stored.bytes) == ("in/ü data.bin", 256)
    files = airlock.files(session.session_id)
    assert isinstance(files, Files)
    assert [f.path for f in files.items] == ["in/ü data.bin"]
    assert files.charged_bytes == 8192 and files.quota_bytes == 256 << 20
    assert airlock.download_file(session.session_id, "in/ü data.bin") == data
    airlock.remove_file(session.session_id, "in/ü data.bin")
    with refused(404, "file-not-found"):
        airlock.download_file(session.session_id, "in/ü data.bin")


def test_a_path_out_of_the_workspace_is_bad_request(airlock: Airlock) -> None:
    session = airlock.create_session()
    with refused(400, "bad-request"):
        airlock.upload_file(session.session_id, "a//b", b"x")


@pytest.mark.gateway_env({"AIRLOCK_WORKSPACE_QUOTA": "8192"})
def test_an_upload_past_the_quota_is_workspace_full(airlock: Airlock) -> None:
    session = airlock.create_session()
    with refused(507, "workspace-full") as raised:
        airlock.upload_file(session.session_id, "big", b"x" * 8192)
    assert raised.value.details["quotaBytes"] == 8192


@pytest.mark.anyio
async def test_async_file_calls_upload_list_and_download(gateway: Gateway) -> None:
    async with AsyncAirlock(gateway.url) as client:
        session = await client.create_session()
        await client.upload_file(session.session_id, "a.txt", b"hello")
        files = await client.files(session.session_id)
        assert [(f.path, f.bytes) for f in files.items] == [("a.txt", 5)]
        assert await client.download_file(session.session_id, "a.txt") == b"hello"
        await client.remove_file(session.session_id, "a.txt")
        assert (await client.files(session.session_id)).items == []
