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
_HISTORY = (
    "SELECT COALESCE((SELECT version FROM {session_heads} WHERE session_id = %s), 0), "
    "s.run_id, s.entries, s.meta FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT run_id, "
    "entries, meta, seq FROM {session_segments} WHERE session_id = %s) s ON true ORDER BY s.seq"
)
# an append in one statement: the run's lease (``f``: locked, when leases are kept here),
# whether the run is stored and the session's version (``c``); the segment and the bumped
# version are written only when the lease is ours, the run new and the version as expected
_APPEND_PARTS = (
    "WITH f AS ({lease}), "
    "c AS (SELECT EXISTS (SELECT 1 FROM {{session_segments}} WHERE session_id = %(sid)s "
    "AND run_id = %(rid)s) AS stored, COALESCE((SELECT version FROM {{session_heads}} "
    "WHERE session_id = %(sid)s), 0) AS version), "
    "ok AS (SELECT 1 FROM c WHERE NOT c.stored AND (%(expected)s::bigint IS NULL OR "
    "c.version = %(expected)s::bigint) AND NOT EXISTS (SELECT 1 FROM f WHERE owner IS "
    "DISTINCT FROM %(owner)s::text OR token IS DISTINCT FROM %(token)s::bigint)), "
    "i AS (INSERT INTO {{session_segments}} (session_id, run_id, entries, meta, n_entries, "
    "title, created_at, updated_at) SELECT %(sid)s, %(rid)s, %(entries)s, %(meta)s, "
    "%(count)s, %(title)s, %(now)s, %(now)s FROM ok "
    "ON CONFLICT (session_id, run_id) DO NOTHING RETURNING 1), "
    "b AS (INSERT INTO {{session_heads}} (session_id, version) SELECT %(sid)s, 1 FROM i "
    "ON CONFLICT (session_id) DO UPDATE SET version = {{session_heads}}.version + 1) "
    "SELECT (SELECT owner FROM f), (SELECT token FROM f), c.stored, c.version FROM c"
)
_APPEND = _APPEND_PARTS.format(lease="SELECT NULL::text AS owner, NULL::bigint AS token LIMIT 0")
_APPEND_FENCED = _APPEND_PARTS.format(
    lease="SELECT owner, token FROM {run_leases} WHERE run_id = %(rid)s FOR SHARE"
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
        query, params = self._history_query(session_id)

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(query, params)
            return await cur.fetchall()

        return self._history_of(session_id, await self._db.read(read))

    def _history_query(self, session_id: str) -> tuple[bytes, tuple[str, str]]:
        """``history``'s one statement (one snapshot: the version and the segments agree)
        and its parameters; ``pg_first_read`` sends it with a run's lease and load."""
        validate_id(session_id, "session_id")
        return self._db.q(_HISTORY), (session_id, session_id)

    def _history_of(self, session_id: str, rows: list[Any]) -> SessionHistory:
        current = int(rows[0][0]) if rows else 0
        segments = [_decode(session_id, row[1:]) for row in rows if row[1] is not None]
        return SessionHistory(segments, current)

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        return [e for seg in await self.segments(session_id) for e in seg.entries]

    async def _append(self, request: Append) -> None:
        """The session's lock, then one statement that checks the run's lease, whether the
        run is stored and the session's version, and writes the segment and the version
        only if all three admit it: sent with BEGIN and COMMIT in one round trip. A refusal
        wrote nothing; it is raised from what the statement read."""
        sid, rid = request.session_id, request.run_id
        entries, meta, count, title = encode_segment(request.entries, request.meta)
        now = time.time()
        held = held_lease(rid)
        fenced = held is not None and await self._has_leases()
        statement = self._db.q(_APPEND_FENCED if fenced else _APPEND)
        owner, token = held if held is not None else (None, None)
        params = {
            "sid": sid,
            "rid": rid,
            "entries": entries,
            "meta": meta,
            "count": count,
            "title": title,
            "now": now,
            "expected": request.expected,
            "owner": owner,
            "token": token,
        }

        async def write(conn: Conn) -> Any:
            async with conn.pipeline():
                async with conn.transaction():
                    # under the session's lock nothing changes between the check and the write
                    await conn.execute(_LOCK, (self._lock_key(sid),))
                    cur = await conn.execute(statement, params)
            return await cur.fetchone()

        self._db.check_writable()
        row = await self._db.read(write)
        assert row is not None
        lease_owner, lease_token, stored, current = row
        if held is not None and lease_owner is not None:
            # a run whose lease was taken over must not append either
            check_fence(rid, held, (str(lease_owner), int(lease_token)))
        request.admits(bool(stored), int(current))  # raises the conflict it refused for

    async def _has_leases(self) -> bool:
        """Whether a checkpointer with this prefix keeps its run leases in this database
        (asked until it does; the table is never dropped)."""
        if self._leases_here:
            return True
        table = self._db.prefix + "run_leases"

        async def look(conn: Conn) -> Any:
            cur = await conn.execute("SELECT to_regclass(%s)", (table,))
            return await cur.fetchone()

        found = await self._db.read(look)
        self._leases_here = found is not None and found[0] is not None
        return self._leases_here

    _leases_here = False

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

    async def session_marks(self, after: int, limit: int) -> list[tuple[int, str, str]]:
        """``(seq, session_id, run_id)`` of the newest ``limit`` rows above ``after``."""
        query = self._db.q(
            "SELECT seq, session_id, run_id FROM {session_segments} WHERE seq > %s "
            "ORDER BY seq DESC LIMIT %s"
        )

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(query, (after, limit))
            return await cur.fetchall()

        return [(int(r[0]), str(r[1]), str(r[2])) for r in reversed(await self._db.read(read))]

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


def _decode(session_id: str, row: Any) -> Segment:
    """One stored row as a ``Segment`` (a row that does not decode is a ``StoreError``)."""
    run_id, data, meta_text = row
    entries, meta = decode_segment(session_id, run_id, data, meta_text, backup="database")
    return Segment(run_id, entries, meta)
