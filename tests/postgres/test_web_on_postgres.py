"""Two web app instances on one PostgreSQL database share chats (issue 8: several
``lovia web`` workers behind one load balancer): in one process, and as two server
processes on two ports."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from lovia.stores import open_stores
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from tests.web_server import ROOT, serving

web = pytest.importorskip("lovia.web")


@pytest.fixture
async def two_apps() -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    from lovia.demo import demo_agent

    dsn = postgres_dsn()
    prefix = fresh_prefix()
    stores = [open_stores(dsn, table_prefix=prefix) for _ in range(2)]
    clients = [
        httpx.AsyncClient(
            transport=httpx.ASGITransport(
                app=web.create_app(
                    demo_agent(delay=0), store=web.ChatStore(s, checkpointer=cp), titles=False
                )
            ),
            base_url="http://127.0.0.1",
        )
        for s, cp in stores
    ]
    try:
        yield clients[0], clients[1]
    finally:
        for client in clients:
            await client.aclose()
        for s, cp in stores:
            await s.close()
            await cp.close()
        drop_prefix(dsn, prefix)


def _answered(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    assert "event: done" in response.text
    return response


async def test_a_chat_written_through_one_app_is_seen_and_continued_by_the_other(
    two_apps: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    a, b = two_apps
    chat = uuid.uuid4().hex
    _answered(
        await a.post("/api/chat/stream", json={"message": "hello from a", "session_id": chat})
    )
    listed = (await b.get("/api/sessions")).json()
    assert chat in [c["id"] for c in listed]
    seen = (await b.get(f"/api/sessions/{chat}")).json()
    assert [m["role"] for m in seen["entries"]] == ["user", "assistant"]
    _answered(await b.post("/api/chat/stream", json={"message": "and from b", "session_id": chat}))
    back = (await a.get(f"/api/sessions/{chat}")).json()
    inputs = [m["content"] for m in back["entries"] if m["role"] == "user"]
    assert inputs == ["hello from a", "and from b"]


SERVER = [sys.executable, "-m", "uvicorn", "--factory", "tests.postgres.web_app:make_app"]
SERVER += ["--host", "127.0.0.1", "--log-level", "warning"]


@pytest.fixture
def two_servers() -> Iterator[tuple[str, str]]:
    """Two uvicorn processes serving the app on one database, on two ports."""
    dsn = postgres_dsn()
    prefix = fresh_prefix()
    env = {**os.environ, "LOVIA_TEST_PREFIX": prefix, "PYTHONPATH": str(ROOT)}
    try:
        with (
            serving(SERVER, env=env, quiet=True) as (_, a),
            serving(SERVER, env=env, quiet=True) as (_, b),
        ):
            yield a, b
    finally:
        drop_prefix(dsn, prefix)


async def test_two_server_processes_on_two_ports_share_chats(two_servers: tuple[str, str]) -> None:
    base_a, base_b = two_servers
    async with (
        httpx.AsyncClient(base_url=base_a, timeout=30) as a,
        httpx.AsyncClient(base_url=base_b, timeout=30) as b,
    ):
        chat = uuid.uuid4().hex
        first = {"message": "first, on a", "session_id": chat}
        _answered(await a.post("/api/chat/stream", json=first))
        assert chat in [c["id"] for c in (await b.get("/api/sessions")).json()]
        then = {"message": "then on b", "session_id": chat}
        _answered(await b.post("/api/chat/stream", json=then))
        back = (await a.get(f"/api/sessions/{chat}")).json()
        inputs = [m["content"] for m in back["entries"] if m["role"] == "user"]
        assert inputs == ["first, on a", "then on b"]
