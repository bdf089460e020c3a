"""``SQLiteCheckpointer``: runs in a SQLite file that survives the process.

Two tables. ``checkpoint_runs`` holds one head row per run; ``checkpoint_batches`` holds one row
per ``append`` call with that call's new entries as a JSON array. A save inserts one batch row
and updates the head row in one transaction, so its cost depends on what changed, never on how
long the run already is. The batch rows point at the run by a small integer key rather than
the (up to 512 character) ``run_id``, which keeps the file close to the size of the entries.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import UserTypeError
from ..transcript import TranscriptEntry
from ._checks import check_limit, check_run_ids, check_statuses, validate_id
from ._codec import decode_batches, decode_snapshot, encode_head
from ._entries import checked_entries
from ._sqlite import Migrations, SQLiteStore
from ._sqlite_schema import CHECKPOINT_MIGRATIONS
from ._text import encode_entries
from .checkpoint import RunHead, RunInfo, RunSnapshot, check_updated
from .fork import Forking
from .lease import LeaseClock, held_lease
from .retention import DEFAULT_PRUNE_STATUSES, prune_filter
from .sqlite_lease import SQLiteLeases, check_lease_fence, has_leases

__all__ = ["SQLiteCheckpointer"]

MIGRATIONS: Migrations = CHECKPOINT_MIGRATIONS

# session_id is set only when it changes (_MOVE_RUN): a column in an UPDATE's SET list makes
# SQLite rewrite its index entry, one more page written by every save
_UPDATE_HEAD = (
    "UPDATE checkpoint_runs SET head = ?, status = ?,"
    " entry_count = entry_count + ?, next_seq = next_seq + ?, updated_at = ? WHERE run_key = ?"
)
_MOVE_RUN = "UPDATE checkpoint_runs SET session_id = ? WHERE run_key = ?"

_Row = tuple[int, str, str, str]  # run_key, run_id, head JSON, status


class SQLiteCheckpointer(SQLiteStore, SQLiteLeases, Forking):
    """A ``Checkpointer`` in a SQLite file; ``wal=True`` lets several writers share it.

    It may share one file with ``SQLiteSession``. Use it as ``async with`` or call
    ``await close()`` when done.
    """

    _component = "checkpoint"
    _migrations = MIGRATIONS

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        wal: bool = False,
        read_only: bool = False,
        clock: LeaseClock | None = None,
    ) -> None:
        super().__init__(path, wal=wal, read_only=read_only)
        self._clock = clock or LeaseClock()

    # -- the protocol -----------------------------------------------------------------------

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        """Add ``entries`` after the stored ones and replace the head, in one transaction."""
        await self._db.write(self._saving(run_id, checked_entries(entries), head))

    def append_now(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> bool:
        """The fast path (``AppendsNow``): ``append`` done before this returns, when the file
        lets it run without waiting (see ``SQLiteDatabase.write_now``); False: nothing was
        written, ``append`` instead.
        A subclass that overrides ``append`` always gets False, so its ``append`` runs."""
        if type(self).append is not _APPEND:
            return False
        return self._db.write_now(self._saving(run_id, entries, head))[0]

    def _saving(
        self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead
    ) -> Callable[[sqlite3.Connection], None]:
        """The transaction that appends ``entries`` and replaces the head."""
        validate_id(run_id, "run_id")
        if not isinstance(head, RunHead):
            raise UserTypeError(
                f"head must be a RunHead, got {type(head).__name__}",
                hint="pass a RunHead(agent_name=...); a run's head is snapshot.head",
            )
        # Encode before the transaction, so a value JSON cannot hold fails with nothing written.
        batch = encode_entries(entries) if entries else None
        head_json = encode_head(run_id, head)
        count = len(entries)
        bump = 0 if batch is None else 1
        held = held_lease(run_id)

        def save(conn: sqlite3.Connection) -> None:
            check_lease_fence(conn, run_id, held)  # a worker that lost its lease must not write
            now = head.updated_at  # the head's own time orders list_runs on every backend
            row = conn.execute(
                "SELECT run_key, next_seq, session_id FROM checkpoint_runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is not None:
                conn.execute(_UPDATE_HEAD, (head_json, head.status, count, bump, now, row[0]))
                if row[2] != head.session_id:
                    conn.execute(_MOVE_RUN, (head.session_id, row[0]))
            if row is None:
                cur = conn.execute(
                    "INSERT INTO checkpoint_runs (run_id, head, status, session_id, entry_count,"
                    " next_seq, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        head_json,
                        head.status,
                        head.session_id,
                        count,
                        bump,
                        time.time(),
                        now,
                    ),
                )
                row = (cur.lastrowid, 0)
            if batch is not None:
                conn.execute(
                    "INSERT INTO checkpoint_batches (run_key, seq, entries) VALUES (?, ?, ?)",
                    (row[0], row[1], batch),
                )

        return save

    async def load(self, run_id: str) -> RunSnapshot | None:
        """The run's entries in order with its latest head, or ``None`` for an unknown id."""
        validate_id(run_id, "run_id")

        def read(conn: sqlite3.Connection) -> tuple[_Row, list[bytes]] | None:
            row = conn.execute(
                "SELECT run_key, run_id, head, status FROM checkpoint_runs WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                return None
            return row, _batches(conn, row[0])

        found = await self._db.read_snapshot(read)
        if found is None:
            return None
        return _snapshot(self.path, *found)

    async def delete(self, run_id: str) -> None:
        """Forget the run (head and entries); a later append starts it afresh."""
        validate_id(run_id, "run_id")

        def drop(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT run_key FROM checkpoint_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is not None:
                conn.execute("DELETE FROM checkpoint_batches WHERE run_key = ?", (row[0],))
                conn.execute("DELETE FROM checkpoint_runs WHERE run_key = ?", (row[0],))

        await self._db.write(drop)

    async def update_head(
        self, run_id: str, fn: Callable[[RunHead], RunHead | None]
    ) -> RunHead | None:
        """Replace the run's head with ``fn(head)`` in one transaction (``None`` from ``fn``:
        keep it). Returns the head now stored, or ``None`` when the run does not exist."""
        validate_id(run_id, "run_id")
        path = self.path

        def change(conn: sqlite3.Connection) -> RunHead | None:
            row = conn.execute(
                "SELECT head FROM checkpoint_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                return None
            head = decode_snapshot(run_id, row[0], [], backup="file", place=path).head
            new = check_updated(fn(head))
            if new is None:
                return head
            conn.execute(
                "UPDATE checkpoint_runs SET head = ?, status = ?, session_id = ?, updated_at = ? "
                "WHERE run_id = ?",
                (encode_head(run_id, new), new.status, new.session_id, new.updated_at, run_id),
            )
            return RunHead.from_dict(new.to_dict())

        return await self._db.write(change)

    # -- maintenance (not part of the protocol) ---------------------------------------------

    async def list_runs(
        self, *, statuses: Sequence[str] | None = None, session_id: str | None = None
    ) -> list[RunSnapshot]:
        """Every stored run (heads and entries), newest first, optionally only these statuses
        and only the runs of ``session_id`` (the others' entries are not read)."""
        wanted = check_statuses(statuses)

        def read(conn: sqlite3.Connection) -> list[tuple[_Row, list[bytes]]]:
            sql = "SELECT run_key, run_id, head, status FROM checkpoint_runs"
            where: list[str] = []
            params: tuple[str, ...] = ()
            if wanted is not None:
                where.append(f"status IN ({', '.join('?' * len(wanted))})")
                params = wanted
            if session_id is not None:
                where.append("session_id = ?")
                params = (*params, session_id)
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY updated_at DESC, run_key DESC"  # few runs: no index kept for it
            rows = conn.execute(sql, params).fetchall()
            return [(row, _batches(conn, row[0])) for row in rows]

        if wanted == ():
            return []
        rows = await self._db.read_snapshot(read)
        return [_snapshot(self.path, row, blobs) for row, blobs in rows]

    async def list_run_heads(
        self, *, statuses: Sequence[str] | None = None, session_id: str | None = None
    ) -> list[RunInfo]:
        """Like ``list_runs`` without the entries: each run's id, head and entry count,
        newest first (the entries are never read, however long the runs are)."""
        wanted = check_statuses(statuses)
        if session_id is not None:
            validate_id(session_id, "session_id")
        if wanted == ():
            return []
        path = self.path

        def read(conn: sqlite3.Connection) -> list[tuple[str, str, int]]:
            where, params = _head_filter(wanted, session_id)
            return conn.execute(
                "SELECT run_id, head, entry_count FROM checkpoint_runs"
                + where
                + " ORDER BY updated_at DESC, run_key DESC",
                params,
            ).fetchall()

        return [
            RunInfo(rid, decode_snapshot(rid, head, [], backup="file", place=path).head, count)
            for rid, head, count in await self._db.read_snapshot(read)
        ]

    async def load_first_entries(
        self, run_ids: Sequence[str], *, limit: int = 1
    ) -> dict[str, list[TranscriptEntry]]:
        """The first ``limit`` entries of each of these runs (all of a shorter run's), by run
        id; an unknown id is left out. One read for them all, of the runs' first saves only,
        however long the runs are."""
        ids = check_run_ids(run_ids)
        count = check_limit(limit)
        path = self.path

        def read(conn: sqlite3.Connection) -> list[tuple[str, list[bytes]]]:
            found = []
            for run_id in ids:
                row = conn.execute(
                    "SELECT run_key FROM checkpoint_runs WHERE run_id = ?", (run_id,)
                ).fetchone()
                if row is not None:  # a save adds a row of one entry or more: enough rows
                    rows = conn.execute(
                        "SELECT entries FROM checkpoint_batches WHERE run_key = ?"
                        " ORDER BY seq LIMIT ?",
                        (row[0], count),
                    ).fetchall()
                    found.append((run_id, [_blob(r[0]) for r in rows]))
            return found

        return {
            run_id: decode_batches(run_id, blobs, backup="file", place=path)[:count]
            for run_id, blobs in await self._db.read_snapshot(read)
        }

    async def prune(
        self,
        *,
        older_than: float | None = None,
        statuses: Sequence[str] = DEFAULT_PRUNE_STATUSES,
    ) -> int:
        """Delete runs with these statuses last saved over ``older_than`` seconds ago, except
        runs a live worker holds the lease of.

        Returns how many runs were deleted, in one transaction; sessions in the same file
        are untouched. A pruned ``run_id`` starts afresh when submitted again. The file keeps
        its size (freed pages are reused); run ``VACUUM`` to shrink it (docs/guarantees.md).
        """
        cutoff, wanted = prune_filter(older_than, statuses)
        if not wanted:
            return 0

        def drop(conn: sqlite3.Connection) -> int:
            sql = "SELECT run_key FROM checkpoint_runs WHERE status IN "
            sql += f"({', '.join('?' * len(wanted))})"
            params: list[object] = list(wanted)
            if cutoff is not None:
                sql += " AND updated_at < ?"
                params.append(cutoff)
            if has_leases(conn):  # a run a live worker holds is never pruned under it
                boot, now = self._clock.host()
                sql += (
                    " AND run_id NOT IN (SELECT run_id FROM lovia_run_leases"
                    " WHERE boot = ? AND expires_at > ?)"
                )
                params += [boot, now]
            keys = [(row[0],) for row in conn.execute(sql, params).fetchall()]
            conn.executemany("DELETE FROM checkpoint_batches WHERE run_key = ?", keys)
            conn.executemany("DELETE FROM checkpoint_runs WHERE run_key = ?", keys)
            return len(keys)

        return await self._db.write(drop)


def _head_filter(
    wanted: tuple[str, ...] | None, session_id: str | None
) -> tuple[str, tuple[str, ...]]:
    """The ``WHERE`` clause (and its parameters) of a listing by status and session."""
    where: list[str] = []
    params: tuple[str, ...] = ()
    if wanted is not None:
        where.append(f"status IN ({', '.join('?' * len(wanted))})")
        params = wanted
    if session_id is not None:
        where.append("session_id = ?")  # the checkpoint_runs_session index
        params = (*params, session_id)
    return (" WHERE " + " AND ".join(where) if where else ""), params


def _batches(conn: sqlite3.Connection, run_key: int) -> list[bytes]:
    rows = conn.execute(
        "SELECT entries FROM checkpoint_batches WHERE run_key = ? ORDER BY seq", (run_key,)
    ).fetchall()
    # a batch written as TEXT by another tool still decodes
    return [r[0].encode() if isinstance(r[0], str) else bytes(r[0]) for r in rows]


def _snapshot(path: str, row: _Row, blobs: list[bytes]) -> RunSnapshot:
    _, run_id, head_json, _ = row
    return decode_snapshot(run_id, head_json, blobs, backup="file", place=path)


def _blob(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


_APPEND = SQLiteCheckpointer.append


if TYPE_CHECKING:  # mypy --strict holds the store to the fork it declares (the edits included)
    from .capabilities import ForksRuns

    _FORKS: type[ForksRuns] = SQLiteCheckpointer
