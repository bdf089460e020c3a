"""``PostgresSession``: conversations in PostgreSQL, shared by every worker and host.

The same logical schema as ``SQLiteSession``: one row per segment, ``UNIQUE (session_id,
run_id)`` so append is idempotent in the database itself (S5). Trim and rewind are planned by
``maintenance`` and applied in one transaction that holds a per-session advisory lock; append
takes the same lock, so maintenance never interleaves with a new segment.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from psycopg_pool import AsyncConnectionPool
from pydantic import ValidationError

from ..errors import StoreError, UserError
from ..transcript import TranscriptEntry, entries_from_json, entries_to_json
from ._postgres import Conn, Migrations, PostgresDatabase
from .checkpoint import validate_id
from .maintenance import (
    MaintenancePlan,
    RewindResult,
    SessionInfo,
    rewind_plan,
    title_of,
    trim_plan,
)
from .session import Segment

__all__ = ["PostgresSession"]

MIGRATIONS: Migrations = {
    1: (
        """CREATE TABLE {session_segments} (
            seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            session_id  text             NOT NULL,
            run_id      text             NOT NULL,
            entries     text             NOT NULL,
            meta        text,
            n_entries   integer          NOT NULL,
            title       text,
            created_at  double precision NOT NULL,
            updated_at  double precision NOT NULL,
            UNIQUE (session_id, run_id)
        )""",
        "CREATE INDEX ON {session_segments} (session_id, seq)",
    ),
}

_SELECT = "SELECT run_id, entries, meta FROM {session_segments} WHERE session_id = %s ORDER BY seq"
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"

Planner = Callable[[list[Segment]], MaintenancePlan]


class PostgresSession:
    """A ``Session`` in PostgreSQL: ``PostgresSession("postgresql://app@db:5432/app")``.

    ``dsn_or_pool`` is a DSN (the store opens and closes its own pool of ``min_size`` to
    ``max_size`` connections) or a ``psycopg_pool.AsyncConnectionPool`` you own (opened with
    ``kwargs={"autocommit": True}``; ``close()`` leaves it open unless ``close_pool=True``).
    Tables are named ``<table_prefix>session_segments`` and ``<table_prefix>meta``; they are
    created and migrated on first use. Besides the protocol: ``trim_tool_results``,
    ``rewind``, ``rewind_runs``, ``list_sessions``, ``close`` and ``async with``.
    """

    def __init__(
        self,
        dsn_or_pool: str | AsyncConnectionPool[Any],
        *,
        table_prefix: str = "lovia_",
        min_size: int = 1,
        max_size: int = 4,
        close_pool: bool | None = None,
    ) -> None:
        self._db = PostgresDatabase(
            dsn_or_pool,
            prefix=table_prefix,
            component="session",
            migrations=MIGRATIONS,
            tables=("session_segments",),
            min_size=min_size,
            max_size=max_size,
            close_pool=close_pool,
        )

    @property
    def table_prefix(self) -> str:
        return self._db.prefix

    # -- the protocol -----------------------------------------------------------------------

    async def segments(self, session_id: str) -> list[Segment]:
        validate_id(session_id, "session_id")
        select = self._db.q(_SELECT)

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(select, (session_id,))
            return await cur.fetchall()

        return [_decode(session_id, row) for row in await self._db.read(read)]

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        return [e for seg in await self.segments(session_id) for e in seg.entries]

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        validate_id(session_id, "session_id")
        rid = validate_id(run_id, "run_id") if run_id is not None else uuid.uuid4().hex
        items = list(entries)
        data = entries_to_json(items).decode()
        meta_text = _encode_meta(meta)
        title = title_of(items)
        now = time.time()
        insert = self._db.q(
            "INSERT INTO {session_segments} (session_id, run_id, entries, meta, n_entries, "
            "title, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (session_id, run_id) DO NOTHING"
        )

        async def write(conn: Conn) -> None:
            await conn.execute(_LOCK, (self._lock_key(session_id),))
            await conn.execute(
                insert, (session_id, rid, data, meta_text, len(items), title, now, now)
            )

        await self._db.write(write)
        return rid

    async def clear(self, session_id: str) -> None:
        validate_id(session_id, "session_id")
        delete = self._db.q("DELETE FROM {session_segments} WHERE session_id = %s")

        async def write(conn: Conn) -> None:
            await conn.execute(_LOCK, (self._lock_key(session_id),))
            await conn.execute(delete, (session_id,))

        await self._db.write(write)

    # -- maintenance (built-in stores only; not part of the protocol) -----------------------

    async def trim_tool_results(
        self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1
    ) -> int:
        """Cut stored tool outputs to ``keep_chars`` except in the last ``keep_runs`` runs (S8).

        Returns how many outputs were trimmed; a second call trims nothing. Without a
        ``FileResultStore`` on the context policy a trimmed output is gone for good (S9).
        """
        validate_id(session_id, "session_id")
        trim_plan([], keep_chars=keep_chars, keep_runs=keep_runs)  # bad arguments fail first

        def plan(segments: list[Segment]) -> MaintenancePlan:
            return trim_plan(segments, keep_chars=keep_chars, keep_runs=keep_runs)

        return (await self._maintain(session_id, plan)).count

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        """Keep the first ``keep_entries`` entries of ``load()`` and drop the rest (S10).

        Returns how many entries were removed (tool calls whose results were cut count too).
        Use ``rewind_runs`` to learn which runs changed, and delete their checkpoints (S11).
        """
        return (await self.rewind_runs(session_id, keep_entries=keep_entries)).removed

    async def rewind_runs(self, session_id: str, *, keep_entries: int) -> RewindResult:
        """``rewind``, also naming the runs it truncated or deleted (delete their checkpoints)."""
        validate_id(session_id, "session_id")
        rewind_plan([], keep_entries=keep_entries)  # bad arguments fail before any I/O

        def plan(segments: list[Segment]) -> MaintenancePlan:
            return rewind_plan(segments, keep_entries=keep_entries)

        result = await self._maintain(session_id, plan)
        return RewindResult(result.count, result.affected_run_ids)

    async def list_sessions(self) -> list[SessionInfo]:
        """Every non-empty session, most recently changed first."""
        query = self._db.q(
            "SELECT s.session_id, COUNT(*), SUM(s.n_entries), MIN(s.created_at), "
            "MAX(s.updated_at), (SELECT t.title FROM {session_segments} t "
            "WHERE t.session_id = s.session_id AND t.title IS NOT NULL "
            "ORDER BY t.seq LIMIT 1) "
            "FROM {session_segments} s GROUP BY s.session_id "
            "ORDER BY MAX(s.updated_at) DESC, s.session_id"
        )

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(query)
            return await cur.fetchall()

        return [
            SessionInfo(str(r[0]), int(r[1]), int(r[2] or 0), float(r[3]), float(r[4]), r[5])
            for r in await self._db.read(read)
        ]

    async def _maintain(self, session_id: str, plan_for: Planner) -> MaintenancePlan:
        """Lock the session, read, plan and apply in one transaction (no append slips in)."""
        select = self._db.q(_SELECT)
        update = self._db.q(
            "UPDATE {session_segments} SET entries = %s, meta = %s, n_entries = %s, "
            "title = %s, updated_at = %s WHERE session_id = %s AND run_id = %s"
        )
        delete = self._db.q("DELETE FROM {session_segments} WHERE session_id = %s AND run_id = %s")

        async def apply(conn: Conn) -> MaintenancePlan:
            await conn.execute(_LOCK, (self._lock_key(session_id),))
            cur = await conn.execute(select, (session_id,))
            rows = await cur.fetchall()
            plan = plan_for([_decode(session_id, row) for row in rows])
            now = time.time()
            async with conn.cursor() as batch:
                if plan.replace:
                    await batch.executemany(
                        update,
                        [
                            (
                                entries_to_json(seg.entries).decode(),
                                _encode_meta(seg.meta),
                                len(seg.entries),
                                title_of(seg.entries),
                                now,
                                session_id,
                                seg.run_id,
                            )
                            for seg in plan.replace
                        ],
                    )
                if plan.delete:
                    await batch.executemany(delete, [(session_id, rid) for rid in plan.delete])
            return plan

        return await self._db.write(apply)

    def _lock_key(self, session_id: str) -> str:
        return f"lovia:{self._db.prefix}:session:{session_id}"

    # -- lifetime ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the store (and its pool, when the store opened it)."""
        await self._db.close()

    async def __aenter__(self) -> PostgresSession:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"PostgresSession(table_prefix={self._db.prefix!r})"


def _encode_meta(meta: dict[str, Any] | None) -> str | None:
    if meta is None:
        return None
    try:
        return json.dumps(meta, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UserError(
            f"segment meta is not JSON-safe: {exc}",
            hint="keep meta to dicts, lists, strings, numbers, booleans and None",
        ) from exc


def _decode(session_id: str, row: Any) -> Segment:
    """One stored row as a ``Segment``; a row that does not decode is an error, never skipped."""
    run_id, data, meta_text = row
    try:
        entries = entries_from_json(data)
        meta = json.loads(meta_text) if meta_text is not None else None
    except (ValidationError, ValueError) as exc:
        detail = exc.errors()[0].get("msg") if isinstance(exc, ValidationError) else str(exc)
        raise StoreError(
            f"session {session_id!r}, run {run_id!r}: the stored segment does not decode: {detail}",
            hint="the row was written by other code or damaged; rewind the session to before "
            "this run or restore the database from a backup",
        ) from exc
    if meta is not None and not isinstance(meta, dict):
        raise StoreError(
            f"session {session_id!r}, run {run_id!r}: stored meta is not an object",
            hint="rewind the session to before this run or restore the database from a backup",
        )
    return Segment(run_id, entries, meta)
