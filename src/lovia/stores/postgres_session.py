"""``PostgresSession``: conversations in PostgreSQL, shared by every worker and host.

The same logical schema as ``SQLiteSession``: one row per segment, ``UNIQUE (session_id,
run_id)`` so append is idempotent in the database itself. Trim and rewind are planned by
``maintenance`` and applied in one transaction that holds a per-session advisory lock; append
takes the same lock, so maintenance never interleaves with a new segment. A row per session
in ``session_heads`` holds its version, bumped under that lock by every change (schema 2).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from psycopg import sql

from ..transcript import TranscriptEntry
from ._codec import LIST_SESSIONS, decode_segment, encode_segment
from ._postgres import Conn, Migrations, PostgresStore
from .checkpoint import validate_id
from .lease import check_fence, held_lease
from .maintenance import (
    Append,
    MaintenancePlan,
    Planner,
    SessionHistory,
    SessionInfo,
    SessionMaintenance,
    fork_target_taken,
    session_info,
)
from .session_protocol import Segment

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
    # the session version: one row per session ever written, never deleted (a clear must
    # not bring a version back to a value a run may still hold); existing sessions start at
    # their segment count, so a non-empty session is never at version 0
    2: (
        """CREATE TABLE {session_heads} (
            session_id  text   PRIMARY KEY,
            version     bigint NOT NULL
        )""",
        "INSERT INTO {session_heads} (session_id, version) "
        "SELECT session_id, COUNT(*) FROM {session_segments} GROUP BY session_id",
    ),
}

_SELECT = "SELECT run_id, entries, meta FROM {session_segments} WHERE session_id = %s ORDER BY seq"
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_VERSION = "SELECT version FROM {session_heads} WHERE session_id = %s"
_STORED_AND_VERSION = (
    "SELECT EXISTS (SELECT 1 FROM {session_segments} WHERE session_id = %s AND run_id = %s), "
    "COALESCE((SELECT version FROM {session_heads} WHERE session_id = %s), 0)"
)
_BUMP = (
    "INSERT INTO {session_heads} (session_id, version) VALUES (%s, 1) "
    "ON CONFLICT (session_id) DO UPDATE SET version = {session_heads}.version + 1"
)


class PostgresSession(PostgresStore, SessionMaintenance):
    """A ``Session`` in PostgreSQL: ``PostgresSession("postgresql://app@db:5432/app")``.

    ``dsn_or_pool`` is a DSN (the store opens and closes its own pool of ``min_size`` to
    ``max_size`` connections) or a ``psycopg_pool.AsyncConnectionPool`` you own (opened with
    ``kwargs={"autocommit": True}``; ``close()`` leaves it open unless ``close_pool=True``).
    Tables are named ``<table_prefix>session_segments``, ``<table_prefix>session_heads`` and
    ``<table_prefix>meta``; they are created and migrated on first use. Besides the
    protocol: ``history``, ``trim_tool_results``, ``rewind``, ``rewind_runs``,
    ``list_sessions``, ``close`` and ``async with``.
    """

    _component = "session"
    _migrations = MIGRATIONS
    _tables = ("session_segments", "session_heads")

    # -- the protocol -----------------------------------------------------------------------

    async def segments(self, session_id: str) -> list[Segment]:
        validate_id(session_id, "session_id")
        select = self._db.q(_SELECT)

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(select, (session_id,))
            return await cur.fetchall()

        return [_decode(session_id, row) for row in await self._db.read(read)]

    async def history(self, session_id: str) -> SessionHistory:
        """The session's segments and its version, read in one snapshot."""
        validate_id(session_id, "session_id")
        select, version = self._db.q(_SELECT), self._db.q(_VERSION)

        async def read(conn: Conn) -> tuple[int, list[Any]]:
            cur = await conn.execute(version, (session_id,))
            head = await cur.fetchone()
            cur = await conn.execute(select, (session_id,))
            return (0 if head is None else int(head[0])), await cur.fetchall()

        current, rows = await self._db.read_snapshot(read)
        return SessionHistory([_decode(session_id, row) for row in rows], current)

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        return [e for seg in await self.segments(session_id) for e in seg.entries]

    async def _append(self, request: Append) -> None:
        sid, rid = request.session_id, request.run_id
        columns = encode_segment(request.entries, request.meta)
        now = time.time()
        check, bump = self._db.q(_STORED_AND_VERSION), self._db.q(_BUMP)
        insert = self._db.q(
            "INSERT INTO {session_segments} (session_id, run_id, entries, meta, n_entries, "
            "title, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (session_id, run_id) DO NOTHING"
        )
        held = held_lease(rid)
        leases = self._db.prefix + "run_leases"

        async def write(conn: Conn) -> None:
            # under the session's lock nothing changes between the check and the insert
            await conn.execute(_LOCK, (self._lock_key(sid),))
            if held is not None:  # a run whose lease was taken over must not append either
                await _check_fence(conn, leases, rid, held)
            if request.expected is not None:
                cur = await conn.execute(check, (sid, rid, sid))
                stored, current = await cur.fetchone() or (False, 0)
                if not request.admits(bool(stored), int(current)):
                    return
            cur = await conn.execute(insert, (sid, rid, *columns, now, now))
            if cur.rowcount:
                await conn.execute(bump, (sid,))

        await self._db.write(write)

    async def clear(self, session_id: str) -> None:
        validate_id(session_id, "session_id")
        delete = self._db.q("DELETE FROM {session_segments} WHERE session_id = %s")
        bump = self._db.q(_BUMP)

        async def write(conn: Conn) -> None:
            await conn.execute(_LOCK, (self._lock_key(session_id),))
            cur = await conn.execute(delete, (session_id,))
            if cur.rowcount:
                await conn.execute(bump, (session_id,))

        await self._db.write(write)

    # -- maintenance (built-in stores only; not part of the protocol) -----------------------

    async def list_sessions(self) -> list[SessionInfo]:
        """Every non-empty session, most recently changed first."""
        query = self._db.q(LIST_SESSIONS)

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(query)
            return await cur.fetchall()

        return [session_info(r) for r in await self._db.read(read)]

    async def _fork(
        self, source_id: str, new_id: str, plan: Callable[[list[Segment]], list[Segment]]
    ) -> list[Segment]:
        """Lock both sessions, read the source and write the fork in one transaction."""
        select, bump = self._db.q(_SELECT), self._db.q(_BUMP)
        taken = self._db.q("SELECT 1 FROM {session_segments} WHERE session_id = %s LIMIT 1")
        insert = self._db.q(
            "INSERT INTO {session_segments} (session_id, run_id, entries, meta, n_entries, "
            "title, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        )

        async def write(conn: Conn) -> list[Segment]:
            for key in sorted((self._lock_key(source_id), self._lock_key(new_id))):
                await conn.execute(_LOCK, (key,))  # in one order: two forks never deadlock
            cur = await conn.execute(select, (source_id,))
            copied = plan([_decode(source_id, row) for row in await cur.fetchall()])
            cur = await conn.execute(taken, (new_id,))
            if await cur.fetchone() is not None:
                raise fork_target_taken(new_id)
            now = time.time()
            async with conn.cursor() as batch:
                await batch.executemany(
                    insert,
                    [
                        (new_id, s.run_id, *encode_segment(s.entries, s.meta), now, now)
                        for s in copied
                    ],
                )
            await conn.execute(bump, (new_id,))
            return copied

        done: list[Segment] = await self._db.write(write)
        return done

    async def _maintain(self, session_id: str, plan_for: Planner) -> MaintenancePlan:
        """Lock the session, read, plan and apply in one transaction (no append slips in)."""
        select = self._db.q(_SELECT)
        update = self._db.q(
            "UPDATE {session_segments} SET entries = %s, meta = %s, n_entries = %s, "
            "title = %s, updated_at = %s WHERE session_id = %s AND run_id = %s"
        )
        delete = self._db.q("DELETE FROM {session_segments} WHERE session_id = %s AND run_id = %s")
        bump = self._db.q(_BUMP)

        async def apply(conn: Conn) -> MaintenancePlan:
            await conn.execute(_LOCK, (self._lock_key(session_id),))
            cur = await conn.execute(select, (session_id,))
            rows = await cur.fetchall()
            plan = plan_for([_decode(session_id, row) for row in rows])
            if plan.empty:
                return plan
            await conn.execute(bump, (session_id,))
            now = time.time()
            async with conn.cursor() as batch:
                if plan.replace:
                    await batch.executemany(
                        update,
                        [
                            (*encode_segment(seg.entries, seg.meta), now, session_id, seg.run_id)
                            for seg in plan.replace
                        ],
                    )
                if plan.delete:
                    await batch.executemany(delete, [(session_id, rid) for rid in plan.delete])
            return plan

        return await self._db.write(apply)

    def _lock_key(self, session_id: str) -> str:
        return f"lovia:{self._db.prefix}:session:{session_id}"


async def _check_fence(conn: Conn, table: str, run_id: str, held: tuple[str, int]) -> None:
    """The run's lease, when a checkpointer with the same prefix keeps leases here."""
    cur = await conn.execute("SELECT to_regclass(%s)", (table,))
    found = await cur.fetchone()
    if found is None or found[0] is None:
        return
    query = sql.SQL("SELECT owner, token FROM {} WHERE run_id = %s FOR SHARE").format(
        sql.Identifier(table)
    )
    cur = await conn.execute(query, (run_id,))
    row = await cur.fetchone()
    check_fence(run_id, held, None if row is None else (str(row[0]), int(row[1])))


def _decode(session_id: str, row: Any) -> Segment:
    """One stored row as a ``Segment`` (a row that does not decode is a ``StoreError``)."""
    run_id, data, meta_text = row
    entries, meta = decode_segment(session_id, run_id, data, meta_text, backup="database")
    return Segment(run_id, entries, meta)
