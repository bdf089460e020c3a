"""Issue 30: chats another process writes join the chat list, and a listing reads only the
session rows written since the last one (not every stored session).

A real uvicorn on 127.0.0.1 serves a SQLite file while a separate Python process writes
chats into it with ``Runner.run`` (as a CLI run or another server would); the PostgreSQL
case runs two stores on one database, one writing, one listing.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import Agent, Runner, SQLiteSession
from lovia.stores import SQLiteCheckpointer
from lovia.stores.maintenance import SessionInfo
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatStore

from .test_browser import Server

DSN = os.environ.get("LOVIA_TEST_POSTGRES_DSN")

WRITER = """
import asyncio, sys
from lovia import Agent, Runner, SQLiteSession
from lovia.testing import ScriptedProvider, text

async def main(db: str, ids: list[str]) -> None:
    async with SQLiteSession(db, wal=True) as session:
        for sid in ids:
            agent = Agent("assistant", model=ScriptedProvider([text("hello " + sid)]))
            await Runner.run(agent, "hi from " + sid, session=session, session_id=sid)

asyncio.run(main(sys.argv[1], sys.argv[2:]))
"""


def write_elsewhere(db: Path, *ids: str) -> None:
    """Chats written by a Python process of their own into ``db``."""
    subprocess.run([sys.executable, "-c", WRITER, str(db), *ids], check=True, timeout=120)


class CountingSession(SQLiteSession):
    """A SQLite session store that counts how often every session is read for a list."""

    listed = 0

    async def list_sessions(self) -> list[SessionInfo]:
        self.listed += 1
        return await super().list_sessions()


def _ids(base: str, q: str = "") -> set[str]:
    answer = httpx.get(f"{base}/api/sessions", params={"q": q} if q else None, timeout=30)
    assert answer.status_code == 200, answer.text
    return {c["id"] for c in answer.json()}


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[tuple[str, Path, CountingSession]]:
    db = tmp_path / "chats.db"
    write_elsewhere(db, "before-1", "before-2")
    session = CountingSession(db, wal=True)
    store = ChatStore(session, meta_path=db, checkpointer=SQLiteCheckpointer(db, wal=True))
    with Server(db, store=store) as server:
        yield server.url.rstrip("/"), db, session


def test_a_chat_another_process_writes_is_listed_on_the_next_listing(
    counted: tuple[str, Path, CountingSession],
) -> None:
    base, db, _ = counted
    assert _ids(base) == {"before-1", "before-2"}
    write_elsewhere(db, "after-1")
    assert _ids(base) == {"before-1", "before-2", "after-1"}
    assert _ids(base, "after") == {"after-1"}
    # the newest chat's rows go, and SQLite hands their numbers to the next chat written
    assert httpx.delete(f"{base}/api/sessions/after-1").status_code == 200
    write_elsewhere(db, "after-2")
    assert _ids(base) == {"before-1", "before-2", "after-2"}
    write_elsewhere(db, "after-3", "after-4")
    assert _ids(base, "after") == {"after-2", "after-3", "after-4"}
    assert httpx.delete(f"{base}/api/sessions").status_code == 200  # every row goes
    assert _ids(base) == set()
    write_elsewhere(db, "again")
    assert _ids(base) == {"again"}


def test_a_listing_reads_every_session_only_when_a_new_one_may_be_missing(
    counted: tuple[str, Path, CountingSession],
) -> None:
    base, db, session = counted
    _ids(base)
    read = session.listed
    for q in ("", "before", "", "x"):
        _ids(base, q)
    assert session.listed == read  # nothing new: no listing read every session
    sent = httpx.post(f"{base}/api/chat", json={"message": "hi", "session_id": "here"}, timeout=60)
    assert sent.status_code == 200, sent.text
    _ids(base)
    _ids(base)
    assert session.listed == read  # a chat of this server's own has its row already
    write_elsewhere(db, "elsewhere")
    assert "elsewhere" in _ids(base)
    assert _ids(base) >= {"here", "elsewhere", "before-1"}


@pytest.mark.skipif(not DSN, reason="set LOVIA_TEST_POSTGRES_DSN")
def test_on_postgres_a_chat_another_store_writes_is_adopted_without_a_full_read() -> None:
    from lovia.stores.postgres import PostgresSession

    prefix = f"adopt30_{uuid.uuid4().hex[:8]}_"
    calls: list[int] = []

    class Counting(PostgresSession):
        async def list_sessions(self) -> list[SessionInfo]:
            calls.append(1)
            return await super().list_sessions()

    async def write(session: Any, sid: str) -> None:
        agent = Agent("assistant", model=ScriptedProvider([text("hello")]))
        await Runner.run(agent, f"hi from {sid}", session=session, session_id=sid)

    async def go() -> None:
        assert DSN
        other = PostgresSession(DSN, table_prefix=prefix)  # another server or a CLI run
        watched = Counting(DSN, table_prefix=prefix)
        store = ChatStore(watched, meta_path=DSN)
        try:
            await write(other, "a")
            assert await store.adopt_sessions(every=0) == 1
            assert await store.adopt_sessions(every=0) == 0
            full = len(calls)
            await store.adopt_sessions(every=0)
            assert len(calls) == full  # nothing new: only the newest rows were read
            await write(other, "b")
            await write(other, "c")
            assert await store.adopt_sessions(every=0) == 2
            await store.delete("c")
            await write(other, "d")
            assert await store.adopt_sessions(every=0) == 1
            assert {m.id for m in await store.list()} == {"a", "b", "d"}
        finally:
            await store.close()
            await other.close()
            import psycopg

            with psycopg.connect(DSN, autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT tablename FROM pg_tables WHERE tablename LIKE %s", (prefix + "%",)
                ).fetchall()
                for (name,) in rows:
                    conn.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')

    asyncio.run(go())
