"""Two web app instances on one PostgreSQL database share chats (issue 8: several
``lovia web`` workers behind one load balancer)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from lovia.stores import open_stores
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn

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
                app=web.create_app(demo_agent(delay=0), session=s, checkpointer=cp)
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
    assert "run_completed" in response.text
    return response


async def test_a_chat_written_through_one_app_is_seen_and_continued_by_the_other(
    two_apps: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    a, b = two_apps
    chat = (await a.post("/api/chats")).json()["id"]
    _answered(await a.post(f"/api/chats/{chat}/messages", json={"content": "hello from a"}))
    listed = (await b.get("/api/chats")).json()
    assert chat in [c["id"] for c in listed]
    seen = (await b.get(f"/api/chats/{chat}")).json()
    assert [e["type"] for e in seen["entries"]] == ["input", "assistant_text"]
    _answered(await b.post(f"/api/chats/{chat}/messages", json={"content": "and from b"}))
    back = (await a.get(f"/api/chats/{chat}")).json()
    inputs = [e["content"] for e in back["entries"] if e["type"] == "input"]
    assert inputs == ["hello from a", "and from b"]
