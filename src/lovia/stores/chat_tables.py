"""The web server's chat tables, in SQLite: a chat's title, agent, pin and origin, what runs
it had, its schedules and the data its UI components keep.

They are the tables lovia 0.9.119's web server kept beside the transcripts (``chat_sessions``,
``chat_runs``, ``chat_schedules``, ``chat_ui_data``), with its columns, so a database that
server wrote opens with its chats' titles, pins, run history and schedules. A table or column
an older file lacks is added on open; nothing else of such a file is changed. ``":memory:"``
keeps them in memory (one connection, for one process).

Every method runs its statement in a worker thread on one connection (WAL, a busy timeout:
several servers may share the file), opened at the first statement and kept until ``close``
(opening one per statement cost a connect and three pragmas each time, several times per
chat turn); SQL is parameterized throughout.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from . import _conns, _legacy
from ._sqlite_conn import opening
from .chat_rows import CHAT_COLUMNS, ChatMeta, chat_dict, chat_page, lenient
from .chat_runs import RunAndScheduleTables
from .chat_search import SearchIndex, ensure_search_index, search_where

__all__ = ["SQLiteChatTables"]

_T = TypeVar("_T")

_TABLES = {
    "chat_sessions": (
        "id TEXT PRIMARY KEY",
        "title TEXT",
        "agent TEXT",
        "created_at REAL NOT NULL",
        "updated_at REAL NOT NULL",
        "active_run_id TEXT",
        "pinned INTEGER NOT NULL DEFAULT 0",
        "parent_id TEXT",
        "active_context_json TEXT",
        "origin_kind TEXT",
        "origin_session_id TEXT",
        "origin_ref TEXT",
    ),
    "chat_schedules": (
        "id TEXT PRIMARY KEY",
        "agent TEXT",
        "input TEXT NOT NULL",
        "session_id TEXT",
        "trigger_kind TEXT NOT NULL",
        "trigger_expr TEXT NOT NULL",
        "next_fire REAL NOT NULL",
        "active INTEGER NOT NULL DEFAULT 1",
        "last_session_id TEXT",
        "created_at REAL NOT NULL",
        "updated_at REAL NOT NULL",
        "until TEXT",
        "max_fires INTEGER",
        "expires_at REAL",
        "fire_count INTEGER NOT NULL DEFAULT 0",
        "finished_reason TEXT",
        "context_json TEXT",
    ),
    "chat_runs": (
        "id TEXT PRIMARY KEY",
        "session_id TEXT",
        "agent TEXT",
        "source TEXT NOT NULL",
        "status TEXT NOT NULL",
        "error TEXT",
        "started_at REAL NOT NULL",
        "finished_at REAL",
        "usage_json TEXT",
    ),
}
_UI_DATA = (
    "CREATE TABLE IF NOT EXISTS chat_ui_data (session_id TEXT NOT NULL, id TEXT NOT NULL, "
    "created_at REAL NOT NULL, payload BLOB NOT NULL, PRIMARY KEY (session_id, id))"
)
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS idx_chat_sessions_updated ON chat_sessions(updated_at DESC)",
    "CREATE INDEX IF NOT EXISTS idx_chat_sessions_pinned "
    "ON chat_sessions(pinned DESC, updated_at DESC)",
    "CREATE INDEX IF NOT EXISTS idx_chat_sessions_parent ON chat_sessions(parent_id)",
    # the chat list's page (top-level chats, pinned first, newest first) read in order: with
    # only the parent index SQLite sorts every chat for each page (17 ms at 10,000 chats)
    "CREATE INDEX IF NOT EXISTS idx_chat_sessions_listing "
    "ON chat_sessions(parent_id, pinned DESC, updated_at DESC)",
    "CREATE INDEX IF NOT EXISTS idx_chat_schedules_due ON chat_schedules(active, next_fire)",
    "CREATE INDEX IF NOT EXISTS idx_chat_runs_session ON chat_runs(session_id, started_at DESC)",
    "CREATE INDEX IF NOT EXISTS idx_chat_runs_source ON chat_runs(source, started_at DESC)",
)
INLINE_READ_S = 0.005
"""A read run on the event loop's thread that takes SQLite longer than this runs on a thread."""
_CHATS = f"SELECT {', '.join(CHAT_COLUMNS)} FROM chat_sessions"


def _like(query: str) -> str:
    escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class SQLiteChatTables(RunAndScheduleTables):
    """The chat tables in the SQLite file at ``path`` (``":memory:"``: in memory)."""

    def __init__(self, path: str | Path, *, wal: bool = True) -> None:
        self.path = str(path)
        self.wal = wal
        self._lock = threading.Lock()
        # one connection, kept: in memory from the start, for a file from its first statement
        # on, counted among the file's open connections (the stores sharing the file read
        # its header only while this process has none open: closing a descriptor of the
        # file would drop this connection's locks)
        self._kept: sqlite3.Connection | None = None
        self._key: _conns.Key | None = None
        self._index: SearchIndex | None = None  # searches go through chat_search's index
        if self.path == ":memory:":
            self._kept = self._open()
        else:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._create()

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=30.0, check_same_thread=False, isolation_level=None
        )
        conn.text_factory = lenient
        conn.execute("PRAGMA busy_timeout=30000")
        if self.wal and self._kept is None and self.path != ":memory:":
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def _create(self) -> None:
        with self._lock:
            conn = self._kept or self._open()
            conn.execute("BEGIN IMMEDIATE")
            try:
                names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
                if not names and self.path != ":memory:":
                    # a new file: mark it lovia's, so the session store and checkpointer
                    # sharing it make their tables beside these (a file with tables and no
                    # mark is a foreign database they leave alone)
                    conn.execute(
                        "CREATE TABLE lovia_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
                    )
                    _legacy.mark_for_0_9_119(conn, _legacy.STORES_0_9_119)
                for table, columns in _TABLES.items():
                    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(columns)})")
                    present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                    for column in columns[1:]:  # an older file: add what it lacks
                        if column.split(" ", 1)[0] not in present:
                            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
                conn.execute(_UI_DATA)
                for statement in _INDEXES:
                    conn.execute(statement)
                self._index = SearchIndex() if ensure_search_index(conn) else None
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            finally:
                if conn is not self._kept:
                    conn.close()

    def close(self) -> None:
        with self._lock:
            if self._kept is not None:
                _conns.close(self._kept, self._key)
                self._kept, self._key = None, None

    def _kept_conn(self) -> sqlite3.Connection:
        """The kept connection (``self._lock`` held), opened at the first statement."""
        conn = self._kept
        if conn is None:
            with opening():
                conn = self._open()
                self._key = _conns.key_of(self.path, False)
                _conns.opened(self._key)
            self._kept = conn
        return conn

    # -- plumbing -------------------------------------------------------------------------------

    def _locked(self, work: Callable[[sqlite3.Connection], _T], write: bool) -> _T:
        with self._lock:
            conn = self._kept_conn()
            if not write:
                return work(conn)
            conn.execute("BEGIN IMMEDIATE")
            try:
                out = work(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # the kept connection leaves no transaction open
                    conn.execute("ROLLBACK")
                raise
            return out

    async def _run(self, work: Callable[[sqlite3.Connection], _T], *, write: bool = True) -> _T:
        if not write and self._inline_reads and self._lock.acquire(blocking=False):
            try:
                done, out = self._read_here(work)
            finally:
                self._lock.release()
            if done:
                return cast("_T", out)
        return await asyncio.to_thread(self._locked, work, write)

    _inline_reads = True

    def _read_here(self, work: Callable[[sqlite3.Connection], _T]) -> tuple[bool, Any]:
        """A read on the event loop's thread (``self._lock`` held): a thread hop costs more
        than reading a page of chats. It never waits there: no busy timeout, and SQLite's
        work is interrupted past ``INLINE_READ_S``; ``(False, None)`` then, and the read
        runs again on a thread."""
        conn = self._kept_conn()
        # CPU time, not the clock: a busy machine that pauses this thread does not make
        # the read slow (it would run again on a thread, paying twice)
        deadline = time.thread_time() + INLINE_READ_S
        conn.execute("PRAGMA busy_timeout=0")
        conn.set_progress_handler(lambda: time.thread_time() > deadline, 2000)
        try:
            return True, work(conn)
        except sqlite3.OperationalError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            text = str(exc)
            if "interrupted" in text or "locked" in text or "busy" in text:
                return False, None
            raise
        finally:
            conn.set_progress_handler(None, 0)
            conn.execute("PRAGMA busy_timeout=30000")

    async def _write(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        return await self._run(lambda c: c.execute(sql, params).rowcount)

    async def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return await self._run(lambda c: c.execute(sql, params).fetchall(), write=False)

    async def _one(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        rows = await self._all(sql, params)
        return rows[0] if rows else None

    # -- chats ----------------------------------------------------------------------------------

    async def upsert(
        self,
        session_id: str,
        *,
        agent: str | None,
        title: str | None,
        parent_id: str | None,
        spawned_from: str | None,
        now: float,
    ) -> None:
        await self._write(
            "INSERT INTO chat_sessions (id, title, agent, created_at, updated_at, parent_id, "
            "origin_kind, origin_session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at, "
            "agent = COALESCE(chat_sessions.agent, excluded.agent)",
            (
                session_id,
                title,
                agent,
                now,
                now,
                parent_id,
                "spawn" if spawned_from else None,
                spawned_from,
            ),
        )

    async def set_title(self, session_id: str, title: str) -> bool:
        sql = "UPDATE chat_sessions SET title = ? WHERE id = ?"
        return await self._write(sql, (title, session_id)) == 1

    async def replace_title(self, session_id: str, title: str, expected: str | None) -> bool:
        """Set the title only while it is still ``expected`` (a rename wins over it)."""
        sql = "UPDATE chat_sessions SET title = ? WHERE id = ? AND title IS ?"
        return await self._write(sql, (title, session_id, expected)) == 1

    async def set_pinned(self, session_id: str, pinned: bool) -> None:
        await self._write(
            "UPDATE chat_sessions SET pinned = ? WHERE id = ?", (int(pinned), session_id)
        )

    async def get(self, session_id: str) -> ChatMeta | None:
        row = await self._one(f"{_CHATS} WHERE id = ?", (session_id,))
        return None if row is None else ChatMeta.from_row(row)

    async def get_many(self, session_ids: Sequence[str]) -> dict[str, ChatMeta]:
        out: dict[str, ChatMeta] = {}
        ids = list(session_ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            for row in await self._all(f"{_CHATS} WHERE id IN ({marks})", tuple(chunk)):
                meta = ChatMeta.from_row(row)
                out[meta.id] = meta
        return out

    async def list_chats(
        self, *, query: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[ChatMeta]:
        return [ChatMeta.from_row(r) for r in await self._chat_rows(query, limit, offset)]

    async def chat_dicts(
        self, *, query: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[dict[str, Any]]:
        """``list_chats`` as ``ChatMeta.to_dict`` gives each chat (the chat list's route)."""
        return [chat_dict(r) for r in await self._chat_rows(query, limit, offset)]

    async def _chat_rows(self, query: str | None, limit: int, offset: int) -> list[tuple[Any, ...]]:
        index = self._index

        def work(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            where, params = "parent_id IS NULL", tuple[str, ...]()
            if query:  # one worker call: the search's first read and its rows
                where, params = search_where(conn, query, _like(query), index)
            sql = f"{_CHATS} WHERE {where} ORDER BY pinned DESC, updated_at DESC LIMIT ? OFFSET ?"
            return chat_page(conn, sql, (*params, limit, offset))

        return await self._run(work, write=False)

    async def children(self, parent_id: str) -> list[ChatMeta]:
        rows = await self._all(f"{_CHATS} WHERE parent_id = ? ORDER BY created_at", (parent_id,))
        return [ChatMeta.from_row(r) for r in rows]

    async def insert_fork(self, fork_id: str, source_id: str, ref: str | None, now: float) -> bool:
        """The row that makes a fork exist, and its copy of the source's UI data, in one
        transaction; ``False`` when the source has no row (it was deleted meanwhile)."""

        def work(conn: sqlite3.Connection) -> bool:
            source = conn.execute(
                "SELECT title, agent FROM chat_sessions WHERE id = ?", (source_id,)
            ).fetchone()
            if source is None:
                return False
            conn.execute(
                "INSERT INTO chat_ui_data (session_id, id, created_at, payload) "
                "SELECT ?, id, created_at, payload FROM chat_ui_data WHERE session_id = ?",
                (fork_id, source_id),
            )
            conn.execute(
                "INSERT INTO chat_sessions (id, title, agent, created_at, updated_at, "
                "origin_kind, origin_session_id, origin_ref) VALUES (?, ?, ?, ?, ?, 'fork', ?, ?)",
                (fork_id, source[0], source[1], now, now, source_id, ref),
            )
            return True

        return await self._run(work)

    async def delete(self, session_ids: Sequence[str], *, schedules: bool) -> None:
        ids = tuple(session_ids)
        if not ids:
            return
        marks = ", ".join("?" * len(ids))

        def work(conn: sqlite3.Connection) -> None:
            if schedules:
                found = conn.execute(
                    f"SELECT id FROM chat_schedules WHERE session_id IN ({marks})", ids
                ).fetchall()
                sources = tuple(f"schedule:{row[0]}" for row in found)
                conn.execute(f"DELETE FROM chat_schedules WHERE session_id IN ({marks})", ids)
                if sources:
                    more = ", ".join("?" * len(sources))
                    conn.execute(f"DELETE FROM chat_runs WHERE source IN ({more})", sources)
            conn.execute(f"DELETE FROM chat_ui_data WHERE session_id IN ({marks})", ids)
            conn.execute(f"DELETE FROM chat_runs WHERE session_id IN ({marks})", ids)
            conn.execute(f"DELETE FROM chat_sessions WHERE id IN ({marks})", ids)

        await self._run(work)

    async def tree(self, session_id: str) -> list[str]:
        """``session_id`` and the chats it owns (``parent_id``), at any depth."""
        rows = await self._all(
            "WITH RECURSIVE tree(id) AS (SELECT ? UNION "
            "SELECT s.id FROM chat_sessions s JOIN tree ON s.parent_id = tree.id) "
            "SELECT id FROM tree",
            (session_id,),
        )
        return [str(r[0]) for r in rows]

    async def all_ids(self) -> list[str]:
        return [str(r[0]) for r in await self._all("SELECT id FROM chat_sessions")]

    # -- the run a chat may resume, and its client context -----------------------------------

    async def active_run(self, session_id: str) -> tuple[str | None, str | None]:
        row = await self._one(
            "SELECT active_run_id, active_context_json FROM chat_sessions WHERE id = ?",
            (session_id,),
        )
        return (None, None) if row is None else (row[0], row[1])

    async def set_active_run(self, session_id: str, run_id: str, context: str | None) -> None:
        await self._write(
            "UPDATE chat_sessions SET active_run_id = ?, active_context_json = ? WHERE id = ?",
            (run_id, context, session_id),
        )

    async def clear_active_run(self, session_id: str, expected: str | None) -> None:
        sql = "UPDATE chat_sessions SET active_run_id = NULL, active_context_json = NULL "
        if expected is None:
            await self._write(sql + "WHERE id = ?", (session_id,))
        else:
            await self._write(sql + "WHERE id = ? AND active_run_id = ?", (session_id, expected))

    # -- UI component data --------------------------------------------------------------------

    async def put_ui_data(self, session_id: str, ref: str, payload: bytes) -> bool:
        blob = zlib.compress(payload)
        count = await self._write(
            "INSERT INTO chat_ui_data (session_id, id, created_at, payload) "
            "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM chat_sessions WHERE id = ?)",
            (session_id, ref, time.time(), blob, session_id),
        )
        return count == 1

    async def get_ui_data(self, session_id: str, ref: str) -> bytes | None:
        row = await self._one(
            "SELECT payload FROM chat_ui_data WHERE session_id = ? AND id = ?", (session_id, ref)
        )
        return None if row is None else zlib.decompress(row[0])
