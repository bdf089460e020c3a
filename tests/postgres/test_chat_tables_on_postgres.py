"""``lovia web --db postgresql://...``: the chat tables (titles, pins, run records,
schedules, UI data) are in PostgreSQL, so every web server on the database sees the same
ones: a chat renamed and pinned on one is so on the other, a schedule made on one is listed
and fired by the other, once per due time."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from lovia.stores import open_stores
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn

web = pytest.importorskip("lovia.web")


@pytest.fixture
async def two_apps() -> AsyncIterator[list[Any]]:
    from lovia.demo import demo_agent

    dsn = postgres_dsn()
    prefix = fresh_prefix()
    stores = [open_stores(dsn, table_prefix=prefix) for _ in range(2)]
    chat_stores = [web.ChatStore(s, checkpointer=cp, meta_path=dsn) for s, cp in stores]
    apps = [web.create_app(demo_agent(delay=0), store=cs, titles=False) for cs in chat_stores]
    clients = [
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")
        for app in apps
    ]
    try:
        yield [*clients, *chat_stores, *apps]
    finally:
        for client in clients:
            await client.aclose()
        for store in chat_stores:
            await store.close()
        drop_prefix(dsn, prefix)


async def test_a_chat_renamed_and_pinned_on_one_server_is_so_on_the_other(
    two_apps: list[Any],
) -> None:
    a, b = two_apps[:2]
    chat = uuid.uuid4().hex
    answered = await a.post("/api/chat/stream", json={"message": "hello", "session_id": chat})
    assert "event: done" in answered.text
    changed = await a.patch(f"/api/sessions/{chat}", json={"title": "Budget 2027", "pinned": True})
    assert changed.status_code == 200, changed.text
    listed = {c["id"]: c for c in (await b.get("/api/sessions")).json()}
    assert listed[chat]["title"] == "Budget 2027" and listed[chat]["pinned"] is True
    found = (await b.get("/api/sessions", params={"q": "budget"})).json()
    assert [c["id"] for c in found] == [chat]
    runs = (await b.get("/api/runs/history", params={"session_id": chat})).json()
    assert [r["status"] for r in runs] == ["completed"]


async def test_a_schedule_made_on_one_server_fires_once_across_both(two_apps: list[Any]) -> None:
    a, b, _, store_b, app_a, app_b = two_apps
    spec = {"input": "tick", "trigger_kind": "every", "trigger_expr": "3600"}
    made = (await a.post("/api/schedules", json=spec)).json()
    assert [s["id"] for s in (await b.get("/api/schedules")).json()] == [made["id"]]
    due = made["next_fire"] + 1
    fired = [await app.state.deps.scheduler.tick(due) for app in (app_a, app_b)]
    assert sorted(fired) == [0, 1]  # one server fires the due time, the other sees it taken
    row = await store_b.get_schedule(made["id"])
    assert row is not None and row.fire_count == 1 and row.next_fire > due
    assert time.time() < row.next_fire


def _plan(dsn: str, sql: str, options: str = "") -> str:
    import psycopg

    with psycopg.connect(dsn, autocommit=True, options=options) as conn:
        conn.execute("SET enable_seqscan = off")  # a few rows: the index whenever there is one
        return "\n".join(str(r[0]) for r in conn.execute(f"EXPLAIN {sql}").fetchall())


async def _searched(tables: Any) -> list[str]:
    for i, title in enumerate(["Budget 2027", "budget review", "Holidays", None]):
        await tables.upsert(
            f"chat-{i}", agent="a", title=title, parent_id=None, spawned_from=None, now=100.0 + i
        )
    return [m.id for m in await tables.list_chats(query="BUDGET")]


async def test_a_search_goes_through_a_trigram_index() -> None:
    from lovia.stores.pg_chat_tables import PgChatTables

    dsn = postgres_dsn()
    prefix = fresh_prefix()
    tables = PgChatTables(dsn, table_prefix=prefix)
    try:
        assert await _searched(tables) == ["chat-1", "chat-0"]
        assert [m.id for m in await tables.list_chats(query="T-3")] == ["chat-3"]  # the id
        plan = _plan(dsn, f"SELECT id FROM {prefix}chat_sessions WHERE title ILIKE '%budget%'")
        assert f"{prefix}chat_sessions_title_trgm" in plan, plan
        plan = _plan(dsn, f"SELECT id FROM {prefix}chat_sessions WHERE id ILIKE '%at-1%'")
        assert f"{prefix}chat_sessions_id_trgm" in plan, plan
    finally:
        tables.close()
        drop_prefix(dsn, prefix)


async def test_without_pg_trgm_at_hand_a_search_scans_and_finds_the_same() -> None:
    import psycopg

    from lovia.stores.pg_chat_tables import PgChatTables

    dsn = postgres_dsn()
    schema = f"lovia_notrgm_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        # the extension lives in public (as the other tests make it), out of this
        # search_path: its operator class cannot be named, so no index can be made
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
        conn.execute(f"CREATE SCHEMA {schema}")
    options = f"-c search_path={schema}"
    sep = "&" if "?" in dsn else "?"
    tables = PgChatTables(f"{dsn}{sep}options={quote(options, safe='')}", table_prefix="t_")
    try:
        assert await _searched(tables) == ["chat-1", "chat-0"]
        plan = _plan(dsn, "SELECT id FROM t_chat_sessions WHERE title ILIKE '%budget%'", options)
        assert "trgm" not in plan, plan
    finally:
        tables.close()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
