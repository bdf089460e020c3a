"""``SQLiteSession``: conversations in one SQLite file that outlive the process (S1, S7).

One row per segment. ``UNIQUE (session_id, run_id)`` makes append idempotent in the database
itself (S5), so two processes appending the same run still store one segment. Trim and
rewind are planned by ``maintenance`` and applied in one transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from ..errors import StoreError, UserError
from ..transcript import TranscriptEntry, entries_from_json, entries_to_json
from ._sqlite import Migrations, SQLiteDatabase
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

__all__ = ["SQLiteSession"]

MIGRATIONS: Migrations = {
    1: (
        """
        CREATE TABLE lovia_session_segments (
            seq         INTEGER PRIMARY KEY,
            session_id  TEXT    NOT NULL,
            run_id      TEXT    NOT NULL,
            entries     TEXT    NOT NULL,
            meta        TEXT,
            n_entries   INTEGER NOT NULL,
            title       TEXT,
            created_at  REAL    NOT NULL,
            updated_at  REAL    NOT NULL,
            UNIQUE (session_id, run_id)
        )
        """,
        "CREATE INDEX lovia_session_segments_order ON lovia_session_segments (session_id, seq)",
        # one row per session ever written, never deleted: ``revision`` grows with every
        # change and ``rewrites`` with every change that is not an append, so a reader can
        # tell "unchanged" and "only appended to" from one indexed lookup
        """
        CREATE TABLE lovia_session_heads (
            session_id  TEXT    PRIMARY KEY,
            revision    INTEGER NOT NULL,
            rewrites    INTEGER NOT NULL
        )
        """,
    ),
}

_SELECT = (
    "SELECT seq, run_id, entries, meta FROM lovia_session_segments "
    "WHERE session_id = ? AND seq > ? ORDER BY seq"
)
_BUMP = (
    "INSERT INTO lovia_session_heads (session_id, revision, rewrites) VALUES (?, 1, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET revision = revision + 1, "
    "rewrites = rewrites + excluded.rewrites"
)
CACHED_SESSIONS = 32

Row = tuple[int, str, str, str | None]
Planner = Callable[[list[Segment]], MaintenancePlan]


@dataclass(frozen=True)
class _Stored:
    """A decoded row, kept in the cache and never handed out as is."""

    run_id: str
    entries: list[TranscriptEntry]
    meta: str | None  # JSON text: parsed afresh for each caller, so each gets its own copy

    def segment(self) -> Segment:
        return Segment(
            self.run_id, list(self.entries), json.loads(self.meta) if self.meta else None
        )


@dataclass(frozen=True)
class _Cached:
    """A session's decoded segments as of ``revision``, up to row ``last_seq``."""

    revision: int
    rewrites: int
    last_seq: int
    stored: tuple[_Stored, ...]


class SQLiteSession:
    """A ``Session`` in a SQLite file: ``SQLiteSession("chat.db")``.

    ``wal=True`` turns on WAL journaling with ``synchronous=NORMAL`` and a busy timeout, so
    several stores or processes can write one file (S12). Calls run on the store's own
    thread, never on the event loop. Besides the protocol: ``trim_tool_results``,
    ``rewind``, ``rewind_runs``, ``list_sessions``, ``close`` and ``async with``.
    """

    def __init__(self, path: str | os.PathLike[str], *, wal: bool = False) -> None:
        self._db = SQLiteDatabase(path, wal=wal, component="session", migrations=MIGRATIONS)
        # decoded sessions, touched only on the store's thread; checked against the file's
        # revision on every read, so writes by other stores or processes are always seen
        self._cache: OrderedDict[str, _Cached] = OrderedDict()

    @property
    def path(self) -> str:
        return self._db.path

    # -- the protocol -----------------------------------------------------------------------

    async def segments(self, session_id: str) -> list[Segment]:
        validate_id(session_id, "session_id")
        stored = await self._db.read(lambda conn: self._read(conn, session_id))
        return [s.segment() for s in stored]

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        validate_id(session_id, "session_id")
        stored = await self._db.read(lambda conn: self._read(conn, session_id))
        return [e for s in stored for e in s.entries]

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

        def insert(conn: sqlite3.Connection) -> None:
            # the unique key, not a read-then-write, keeps concurrent appends of one run single
            added = conn.execute(
                "INSERT INTO lovia_session_segments (session_id, run_id, entries, meta, "
                "n_entries, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, run_id) DO NOTHING",
                (session_id, rid, data, meta_text, len(items), title, now, now),
            ).rowcount
            if added:
                conn.execute(_BUMP, (session_id, 0))

        await self._db.write(insert)
        return rid

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
        """Every non-empty session in the file, most recently changed first."""

        def query(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(
                "SELECT s.session_id, COUNT(*), SUM(s.n_entries), MIN(s.created_at), "
                "MAX(s.updated_at), (SELECT t.title FROM lovia_session_segments t "
                "WHERE t.session_id = s.session_id AND t.title IS NOT NULL "
                "ORDER BY t.seq LIMIT 1) "
                "FROM lovia_session_segments s GROUP BY s.session_id "
                "ORDER BY MAX(s.updated_at) DESC, s.session_id"
            ).fetchall()

        rows = await self._db.read(query)
        return [
            SessionInfo(str(r[0]), int(r[1]), int(r[2] or 0), float(r[3]), float(r[4]), r[5])
            for r in rows
        ]

    async def _maintain(self, session_id: str, plan_for: Planner) -> MaintenancePlan:
        """Read, plan and apply in one write transaction, so no append slips in between."""
        return await self._db.write(lambda conn: _apply(conn, session_id, plan_for))

    def _read(self, conn: sqlite3.Connection, session_id: str) -> tuple[_Stored, ...]:
        """The session's decoded rows: from the cache, plus only the rows added since."""
        conn.execute("BEGIN")  # one snapshot for the head and the rows
        try:
            head = conn.execute(
                "SELECT revision, rewrites FROM lovia_session_heads WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if head is None:
                return ()
            revision, rewrites = int(head[0]), int(head[1])
            cached = self._cache.get(session_id)
            if cached is not None and cached.revision == revision:
                self._cache.move_to_end(session_id)
                return cached.stored
            if cached is None or cached.rewrites != rewrites:
                cached = _Cached(0, rewrites, 0, ())  # trimmed, rewound or cleared: start over
            rows = conn.execute(_SELECT, (session_id, cached.last_seq)).fetchall()
        finally:
            conn.execute("COMMIT")
        stored = cached.stored + tuple(_decode(session_id, row) for row in rows)
        last_seq = int(rows[-1][0]) if rows else cached.last_seq
        self._cache[session_id] = _Cached(revision, rewrites, last_seq, stored)
        self._cache.move_to_end(session_id)
        while len(self._cache) > CACHED_SESSIONS:
            self._cache.popitem(last=False)
        return stored

    # -- lifetime ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the file; the store cannot be used afterwards."""
        await self._db.close()

    async def __aenter__(self) -> SQLiteSession:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

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
            (
                entries_to_json(seg.entries).decode(),
                _encode_meta(seg.meta),
                len(seg.entries),
                title_of(seg.entries),
                now,
                session_id,
                seg.run_id,
            ),
        )
    conn.executemany(
        "DELETE FROM lovia_session_segments WHERE session_id = ? AND run_id = ?",
        [(session_id, rid) for rid in plan.delete],
    )
    return plan


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


def _decode(session_id: str, row: Row) -> _Stored:
    """One stored row, decoded; a row that does not decode is an error, never skipped."""
    _, run_id, data, meta_text = row
    try:
        entries = entries_from_json(data)
        meta = json.loads(meta_text) if meta_text is not None else None
    except (ValidationError, ValueError) as exc:
        detail = exc.errors()[0].get("msg") if isinstance(exc, ValidationError) else str(exc)
        raise StoreError(
            f"session {session_id!r}, run {run_id!r}: the stored segment does not decode: {detail}",
            hint="the row was written by other code or damaged; rewind the session to before "
            "this run or restore the file from a backup",
        ) from exc
    if meta is not None and not isinstance(meta, dict):
        raise StoreError(
            f"session {session_id!r}, run {run_id!r}: stored meta is not an object",
            hint="rewind the session to before this run or restore the file from a backup",
        )
    return _Stored(run_id, entries, meta_text)
