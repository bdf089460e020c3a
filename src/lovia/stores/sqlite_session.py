"""``SQLiteSession``: conversations in one SQLite file that outlive the process.

One row per segment. ``UNIQUE (session_id, run_id)`` makes append idempotent in the database
itself, so two processes appending the same run still store one segment. Trim and
rewind are planned by ``maintenance`` and applied in one transaction. The per-session
``revision`` in ``lovia_session_heads`` is the session's version (``history``,
``append(..., expected_version=...)``): it grows with every change, in the same transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..transcript import TranscriptEntry
from ._codec import LIST_SESSIONS, decode_segment, encode_segment
from ._sqlite import Migrations, SQLiteStore
from ._sqlite_schema import SESSION_MIGRATIONS
from .checkpoint import validate_id
from .lease import held_lease
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
from .sqlite_lease import check_lease_fence

__all__ = ["SQLiteSession"]

MIGRATIONS: Migrations = SESSION_MIGRATIONS

_SELECT = (
    "SELECT seq, run_id, entries, meta FROM lovia_session_segments "
    "WHERE session_id = ? AND seq > ? ORDER BY seq"
)
_BUMP = (
    "INSERT INTO lovia_session_heads (session_id, revision, rewrites) VALUES (?, 1, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET revision = revision + 1, "
    "rewrites = rewrites + excluded.rewrites"
)
_STORED_AND_VERSION = (
    "SELECT EXISTS (SELECT 1 FROM lovia_session_segments WHERE session_id = ? AND run_id = ?), "
    "COALESCE((SELECT revision FROM lovia_session_heads WHERE session_id = ?), 0)"
)
_LIST_SESSIONS = LIST_SESSIONS.format(session_segments="lovia_session_segments")
CACHED_SESSIONS = 32

Row = tuple[int, str, str, str | None]


@dataclass(frozen=True)
class _Stored:
    """A decoded row, kept in the cache and never handed out as is."""

    run_id: str
    entries: list[TranscriptEntry]
    meta: str | None  # JSON text: parsed afresh for each caller, so each gets its own copy

    def segment(self) -> Segment:
        return _Segment(self.run_id, list(self.entries), self.meta)


class _Segment(Segment):
    """A ``Segment`` whose ``meta`` is parsed from its JSON on first read: a run reads the
    whole history but only the last segment's meta, and parsing every one made each run's
    cost grow with the session. Equal to a ``Segment`` with the same values."""

    def __init__(
        self, run_id: str, entries: list[TranscriptEntry], meta: str | dict[str, Any] | None
    ) -> None:
        object.__setattr__(self, "run_id", run_id)
        object.__setattr__(self, "entries", entries)
        if isinstance(meta, str):
            object.__setattr__(self, "_meta_text", meta)
        else:
            object.__setattr__(self, "_meta", meta)

    @property
    def meta(self) -> dict[str, Any] | None:
        found = self.__dict__
        if "_meta" not in found:
            found["_meta"] = json.loads(found["_meta_text"]) if found["_meta_text"] else None
        meta: dict[str, Any] | None = found["_meta"]
        return meta

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Segment):
            return NotImplemented
        return (self.run_id, self.entries, self.meta) == (other.run_id, other.entries, other.meta)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Segment(run_id={self.run_id!r}, entries={self.entries!r}, meta={self.meta!r})"


@dataclass(frozen=True)
class _Cached:
    """A session's decoded segments as of ``revision``, up to row ``last_seq``."""

    revision: int
    rewrites: int
    last_seq: int
    stored: tuple[_Stored, ...]
    entries: tuple[TranscriptEntry, ...] = ()  # all segments' entries, in order


class SQLiteSession(SQLiteStore, SessionMaintenance):
    """A ``Session`` in a SQLite file: ``SQLiteSession("chat.db")``.

    ``wal=True`` turns on WAL journaling with ``synchronous=NORMAL`` and a busy timeout, so
    several stores or processes can write one file. Calls run one at a time; a short one
    runs on the event loop's thread, a long one (reading a session the first time,
    maintenance) on a worker thread. Besides the protocol: ``history``,
    ``trim_tool_results``, ``rewind``, ``rewind_runs``, ``list_sessions``, ``close`` and
    ``async with``.
    """

    _component = "session"
    _migrations = MIGRATIONS

    def __init__(
        self, path: str | os.PathLike[str], *, wal: bool = False, read_only: bool = False
    ) -> None:
        super().__init__(path, wal=wal, read_only=read_only)
        # decoded sessions, touched only inside the store's calls (one at a time); checked
        # against the file's revision on every read, so writes by other stores or processes
        # are always seen
        self._cache: OrderedDict[str, _Cached] = OrderedDict()

    # -- the protocol -----------------------------------------------------------------------

    async def segments(self, session_id: str) -> list[Segment]:
        validate_id(session_id, "session_id")
        read = await self._db.read(
            lambda conn: self._read(conn, session_id), inline=session_id in self._cache
        )
        return [s.segment() for s in read.stored]

    async def history(self, session_id: str) -> SessionHistory:
        """The session's segments and its version, read in one snapshot."""
        validate_id(session_id, "session_id")
        read = await self._db.read(
            lambda conn: self._read(conn, session_id), inline=session_id in self._cache
        )
        return SessionHistory([s.segment() for s in read.stored], read.revision)

    async def _run_history(
        self, session_id: str
    ) -> tuple[list[TranscriptEntry], dict[str, Any] | None, int]:
        """What a new run needs of the session, without a ``Segment`` per stored run: all
        entries, the last segment's meta, the version (``history()`` in one read)."""
        validate_id(session_id, "session_id")
        read = await self._db.read(
            lambda conn: self._read(conn, session_id), inline=session_id in self._cache
        )
        last = read.stored[-1].segment().meta if read.stored else None
        return list(read.entries), last, read.revision

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        validate_id(session_id, "session_id")
        read = await self._db.read(
            lambda conn: self._read(conn, session_id), inline=session_id in self._cache
        )
        return list(read.entries)

    async def _append(self, request: Append) -> None:
        sid, rid = request.session_id, request.run_id
        columns = encode_segment(request.entries, request.meta)
        now = time.time()
        held = held_lease(rid)

        def insert(conn: sqlite3.Connection) -> None:
            # a run whose lease (in this file) was taken over must not append either
            check_lease_fence(conn, rid, held)
            if request.expected is not None:  # BEGIN IMMEDIATE holds the write lock
                stored, current = conn.execute(_STORED_AND_VERSION, (sid, rid, sid)).fetchone()
                if not request.admits(bool(stored), int(current)):
                    return
            # the unique key, not a read-then-write, keeps concurrent appends of one run single
            added = conn.execute(
                "INSERT INTO lovia_session_segments (session_id, run_id, entries, meta, "
                "n_entries, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, run_id) DO NOTHING",
                (sid, rid, *columns, now, now),
            ).rowcount
            if added:
                conn.execute(_BUMP, (sid, 0))

        await self._db.write(insert)

    async def clear(self, session_id: str) -> None:
        validate_id(session_id, "session_id")

        def delete(conn: sqlite3.Connection) -> None:
            gone = conn.execute(
                "DELETE FROM lovia_session_segments WHERE session_id = ?", (session_id,)
            ).rowcount
            if gone:
                conn.execute(_BUMP, (session_id, 1))

        await self._db.write(delete)

    # -- maintenance (built-in stores only; not part of the protocol) -----------------------

    async def list_sessions(self) -> list[SessionInfo]:
        """Every non-empty session in the file, most recently changed first."""

        def query(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(_LIST_SESSIONS).fetchall()

        return [session_info(r) for r in await self._db.read(query, inline=False)]

    async def session_marks(self, after: int, limit: int) -> list[tuple[int, str, str]]:
        """``(seq, session_id, run_id)`` of the newest ``limit`` rows above ``after``."""

        def query(conn: sqlite3.Connection) -> list[tuple[int, str, str]]:
            sql = (
                "SELECT seq, session_id, run_id FROM lovia_session_segments "
                "WHERE seq > ? ORDER BY seq DESC LIMIT ?"
            )
            rows = conn.execute(sql, (after, limit)).fetchall()
            return [(int(r[0]), str(r[1]), str(r[2])) for r in reversed(rows)]

        return await self._db.read(query)

    async def _fork(
        self, source_id: str, new_id: str, plan: Callable[[list[Segment]], list[Segment]]
    ) -> list[Segment]:
        """Read the source and write the fork in one write transaction."""

        def work(conn: sqlite3.Connection) -> list[Segment]:
            rows = conn.execute(_SELECT, (source_id, 0)).fetchall()
            copied = plan([_decode(source_id, row).segment() for row in rows])
            taken = conn.execute(
                "SELECT 1 FROM lovia_session_segments WHERE session_id = ? LIMIT 1", (new_id,)
            ).fetchone()
            if taken is not None:
                raise fork_target_taken(new_id)
            now = time.time()
            conn.executemany(
                "INSERT INTO lovia_session_segments (session_id, run_id, entries, meta, "
                "n_entries, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(new_id, s.run_id, *encode_segment(s.entries, s.meta), now, now) for s in copied],
            )
            conn.execute(_BUMP, (new_id, 1))
            return copied

        done: list[Segment] = await self._db.write(work, inline=False)
        return done

    async def _maintain(self, session_id: str, plan_for: Planner) -> MaintenancePlan:
        """Read, plan and apply in one write transaction, so no append slips in between."""
        return await self._db.write(lambda conn: _apply(conn, session_id, plan_for), inline=False)

    def _read(self, conn: sqlite3.Connection, session_id: str) -> _Cached:
        """The session's revision and decoded rows: from the cache, plus only the rows added
        since."""
        conn.execute("BEGIN")  # one snapshot for the head and the rows
        try:
            head = conn.execute(
                "SELECT revision, rewrites FROM lovia_session_heads WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if head is None:
                return _Cached(0, 0, 0, ())
            revision, rewrites = int(head[0]), int(head[1])
            cached = self._cache.get(session_id)
            if cached is not None and cached.revision == revision:
                self._cache.move_to_end(session_id)
                return cached
            if cached is None or cached.rewrites != rewrites:
                cached = _Cached(0, rewrites, 0, ())  # trimmed, rewound or cleared: start over
            rows = conn.execute(_SELECT, (session_id, cached.last_seq)).fetchall()
        finally:
            conn.execute("COMMIT")
        new = tuple(_decode(session_id, row) for row in rows)
        last_seq = int(rows[-1][0]) if rows else cached.last_seq
        entries = cached.entries + tuple(e for s in new for e in s.entries)
        read = self._cache[session_id] = _Cached(
            revision, rewrites, last_seq, cached.stored + new, entries
        )
        self._cache.move_to_end(session_id)
        while len(self._cache) > CACHED_SESSIONS:
            self._cache.popitem(last=False)
        return read

    def __repr__(self) -> str:
        return f"SQLiteSession({self._db.path!r}, wal={self._db.wal})"


def _apply(conn: sqlite3.Connection, session_id: str, plan_for: Planner) -> MaintenancePlan:
    """Load the session's segments, plan, and write the plan back (inside one transaction)."""
    rows = conn.execute(_SELECT, (session_id, 0)).fetchall()
    plan: MaintenancePlan = plan_for([_decode(session_id, row).segment() for row in rows])
    if plan.empty:
        return plan
    conn.execute(_BUMP, (session_id, 1))
    now = time.time()
    for seg in plan.replace:
        conn.execute(
            "UPDATE lovia_session_segments SET entries = ?, meta = ?, n_entries = ?, "
            "title = ?, updated_at = ? WHERE session_id = ? AND run_id = ?",
            (*encode_segment(seg.entries, seg.meta), now, session_id, seg.run_id),
        )
    conn.executemany(
        "DELETE FROM lovia_session_segments WHERE session_id = ? AND run_id = ?",
        [(session_id, rid) for rid in plan.delete],
    )
    return plan


def _decode(session_id: str, row: Row) -> _Stored:
    """One stored row, decoded (a row that does not decode is a ``StoreError``)."""
    _, run_id, data, meta_text = row
    entries, _ = decode_segment(session_id, run_id, data, meta_text, backup="file")
    return _Stored(run_id, entries, meta_text)
