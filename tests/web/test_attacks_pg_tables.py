"""Attacks on the web server's chat tables in real PostgreSQL: titles a model or a visitor
writes with text PostgreSQL cannot store (NUL, a lone surrogate), SQL-looking ids and
titles, search wildcards, and two servers renaming and pinning one chat at once."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator

import pytest

from lovia import InMemorySession
from lovia.web import ChatStore

DSN = os.environ.get("LOVIA_TEST_POSTGRES_DSN")
pytestmark = pytest.mark.skipif(not DSN, reason="set LOVIA_TEST_POSTGRES_DSN")


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"attack5_{uuid.uuid4().hex[:8]}_"
    yield name
    import psycopg

    assert DSN
    with psycopg.connect(DSN, autocommit=True) as conn:
        for table in ("sessions", "schedules", "runs", "ui_data"):
            conn.execute(f"DROP TABLE IF EXISTS {name}chat_{table}")


def _store(prefix: str) -> ChatStore:
    session = InMemorySession()
    session.table_prefix = prefix  # type: ignore[attr-defined]  # the tables' prefix
    assert DSN
    return ChatStore(session, meta_path=DSN)


@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800b"], ids=["nul", "surrogate"])
def test_a_title_postgres_cannot_store_is_cleaned_not_an_error(prefix: str, bad: str) -> None:
    async def go() -> None:
        store = _store(prefix)
        try:
            await store.upsert("c1", title=bad)  # a first message as the title
            await store.set_title("c1", "x" + bad)  # a rename, or a model's title
            before = await store.get("c1")
            assert before is not None
            await store.set_title_if_unchanged("c1", "y" + bad, expected=before.title)
            meta = await store.get("c1")
            assert meta is not None and meta.title is not None
            assert meta.title.startswith("y") and "\x00" not in meta.title
            meta.title.encode("utf-8")
        finally:
            await store.close()

    asyncio.run(go())


def test_two_servers_rename_and_pin_one_chat_at_once(prefix: str) -> None:
    chat = "c'; DROP TABLE x;--%_\\?"

    async def go() -> None:
        a, b = _store(prefix), _store(prefix)
        try:
            await a.upsert(chat, title="first")
            await asyncio.gather(
                *[(a if i % 2 else b).set_title(chat, f"t{i} '%s?\\") for i in range(20)],
                *[(b if i % 2 else a).set_pinned(chat, True) for i in range(20)],
            )
            meta = await b.get(chat)
            assert meta is not None and meta.pinned
            assert meta.title in {f"t{i} '%s?\\" for i in range(20)}
            assert [m.id for m in await a.search("%s?\\")] == [chat]
            assert await a.search("t1_") == []  # '_' is a character, not a wildcard
        finally:
            await a.close()
            await b.close()

    asyncio.run(go())
