"""The web server's chat tables in PostgreSQL (``lovia web --db postgresql://...``): each
chat's title, agent, pin and origin, its run records, its schedules and its UI data, shared
by every web server on the database, as the transcripts and checkpoints are.

The same tables and statements as ``SQLiteChatTables`` (under ``<prefix>chat_...``): each
statement is translated once (``?`` to ``%s``, SQLite's ``IS ?`` to ``IS NOT DISTINCT
FROM``, ``LIKE`` to ``ILIKE``) and runs on one connection of this process, in a worker
thread, as the SQLite tables do; a connection that was lost is opened again for the next
statement.

A search (``ILIKE '%q%'`` on the title and the id) goes through pg_trgm's GIN indexes
on those columns, made when the tables are: with the extension when it is there, or when
this role may create it; else (or where its operator class is not on the ``search_path``)
searches scan every chat, as before, and the log says so.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg

from ._postgres import PgDeadlines, check_prefix
from .chat_tables import _TABLES, SQLiteChatTables

__all__ = ["PgChatTables"]

log = logging.getLogger("lovia.stores")

_T = TypeVar("_T")
_NAMES = re.compile(r"\bchat_(sessions|schedules|runs|ui_data)\b")
_TYPES = {"REAL": "DOUBLE PRECISION", "BLOB": "BYTEA"}


class PgChatTables(SQLiteChatTables):
    """The chat tables in the PostgreSQL database ``dsn``, named ``<table_prefix>chat_...``."""

    _inline_reads = False  # every statement is a round trip: on a thread

    def __init__(self, dsn: str, *, table_prefix: str = "lovia_") -> None:
        self.dsn = dsn
        self.prefix = check_prefix(table_prefix)
        self._pg: psycopg.Connection[Any] | None = None
        super().__init__(":memory:")  # the plumbing below replaces its SQLite connection

    # -- plumbing -----------------------------------------------------------------------------

    def _open(self) -> Any:
        return None  # no SQLite connection: statements go to PostgreSQL

    def _connection(self) -> psycopg.Connection[Any]:
        if self._pg is None or self._pg.closed or self._pg.broken:
            kwargs = PgDeadlines().connect_kwargs(self.dsn)
            self._pg = psycopg.connect(self.dsn, autocommit=True, **kwargs)
        return self._pg

    @functools.lru_cache(maxsize=512)  # noqa: B019 - a few dozen statements, for the process
    def _sql(self, sql: str) -> str:
        sql = sql.replace("%", "%%").replace(" IS ?", " IS NOT DISTINCT FROM ?")
        sql = sql.replace(" LIKE ", " ILIKE ")  # SQLite's LIKE ignores ASCII case
        sql = sql.replace("SELECT ? UNION", "SELECT ?::text UNION").replace("?", "%s")
        return _NAMES.sub(lambda m: f"{self.prefix}chat_{m.group(1)}", sql)

    def _create(self) -> None:
        statements = []
        for table, columns in _TABLES.items():
            typed = [" ".join(_TYPES.get(w, w) for w in c.split(" ")) for c in columns]
            statements.append(f"CREATE TABLE IF NOT EXISTS {table} ({', '.join(typed)})")
        statements.append(
            "CREATE TABLE IF NOT EXISTS chat_ui_data (session_id TEXT NOT NULL, id TEXT "
            "NOT NULL, created_at DOUBLE PRECISION NOT NULL, payload BYTEA NOT NULL, "
            "PRIMARY KEY (session_id, id))"
        )
        for table, column in (
            ("chat_sessions", "updated_at DESC"),
            ("chat_sessions", "parent_id, pinned DESC, updated_at DESC"),
            ("chat_schedules", "active, next_fire"),
            ("chat_runs", "session_id, started_at DESC"),
            ("chat_runs", "source, started_at DESC"),
        ):
            name = f"{self.prefix}{table}_{re.sub(r'[^a-z]+', '_', column.lower())}".strip("_")
            statements.append(f"CREATE INDEX IF NOT EXISTS {name} ON {table} ({column})")
        lock = f"lovia chat tables {self.prefix}"
        with self._lock:
            conn = self._connection()
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock,))
                for statement in statements:
                    conn.execute(self._sql(statement))
                self._trigram_indexes(conn)

    def _trigram_indexes(self, conn: psycopg.Connection[Any]) -> None:
        """The search's indexes (inside ``_create``'s transaction), or none when pg_trgm
        cannot be had: a savepoint keeps the rest of the tables' creation either way."""
        table = f"{self.prefix}chat_sessions"
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                for column in ("title", "id"):
                    conn.execute(
                        f"CREATE INDEX IF NOT EXISTS {table}_{column}_trgm "
                        f"ON {table} USING gin ({column} gin_trgm_ops)"
                    )
        except psycopg.Error as exc:
            log.info("no pg_trgm index for %s (%s): chat searches scan the titles", table, exc)

    async def claim_fire_with(
        self,
        schedule_id: str,
        expected_next: float,
        next_fire: float,
        then: Callable[[Any], Awaitable[Any]],
        *,
        active: bool = True,
    ) -> bool:
        """``claim_fire``, and once won, ``await then(conn)`` in the same transaction (an
        async connection: ``AgentQueue.submit(conn=...)`` queues the fire's run there), so
        the schedule moves on together with its run's job or not at all."""
        claim = self._sql(
            "UPDATE chat_schedules SET next_fire = ?, active = ?, fire_count = fire_count + 1, "
            "updated_at = ? WHERE id = ? AND active = 1 AND next_fire = ?"
        )
        params = (next_fire, int(active), time.time(), schedule_id, expected_next)
        kwargs = PgDeadlines().connect_kwargs(self.dsn)
        async with await psycopg.AsyncConnection.connect(self.dsn, **kwargs) as conn:
            async with conn.transaction():
                cur = await conn.execute(claim, params)
                if cur.rowcount != 1:
                    return False
                await then(conn)
        return True

    def close(self) -> None:
        with self._lock:
            if self._pg is not None:
                self._pg.close()
                self._pg = None

    def _locked(self, work: Callable[[Any], _T], write: bool) -> _T:
        with self._lock:
            conn = _Translated(self._connection(), self._sql)
            if not write:
                return work(conn)
            with self._connection().transaction():
                return work(conn)


class _Translated:
    """The connection as ``SQLiteChatTables``' statements use it (``execute`` with ``?``)."""

    def __init__(self, conn: psycopg.Connection[Any], sql: Callable[[str], str]) -> None:
        self._conn, self._tr = conn, sql

    def execute(self, sql: str, params: Any = ()) -> Any:
        cur = self._conn.execute(self._tr(sql), tuple(params))
        return _Rows(cur)


class _Rows:
    """A cursor whose blobs read as ``bytes`` (``zlib`` and the callers take them so)."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur
        self.rowcount = cur.rowcount

    def fetchone(self) -> Any:
        row = self._cur.fetchone() if self._cur.description else None
        return None if row is None else _bytes(row)

    def fetchall(self) -> list[Any]:
        return [_bytes(r) for r in self._cur.fetchall()] if self._cur.description else []


def _bytes(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
