"""The fast way of a SQLite store's call: run on the event loop's thread, no thread hop.

A call that cannot wait runs right away on the event loop's thread: a read, or a write of a
WAL store (no fsync at commit), when the store has nothing queued or running and a
connection is at hand, since a thread hop costs more than the call itself. It never blocks
on a lock there: a connection at rest has no busy timeout, so a file locked by another
connection answers "busy" at once. A read then goes to a thread that waits for the lock. A
write keeps its turn and tries again from the event loop: after pauses of a tenth of a
millisecond, doubling, that hold up the loop for under a millisecond in all (another
process's save holds the lock for about a tenth of one), then every millisecond, awaiting
in between; a lock held longer than ``LOCK_POLL_BUDGET_S`` is waited for on a thread.
Another writer's commit is seen within a fraction of a millisecond, where SQLite's own busy
handler sleeps 1, 2, 5, 10 ms and a thread costs two wake-ups.

``try_inline`` is the one way in: it answers ``MISSED`` whenever the call should take the
plain way (a thread, ``SQLiteFile._call``) instead, which every call can.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import weakref
from collections.abc import Callable
from typing import Any

from . import _conns
from ._sqlite_conn import check_header, connect, finish, is_locked, opening, rest, wal_mode
from ._sqlite_file import INLINE_SLOW_S, WRITE, SQLiteFile

__all__ = ["LOCK_POLL_BUDGET_S", "MISSED", "InlineCalls"]

INLINE_READ_BUDGET_S = 0.005
"""A read run on the event loop whose SQLite work takes longer than this is interrupted and
runs again on a thread (work in Python, like decoding rows, is not interrupted: a store
whose read decodes much asks for a thread with ``inline=False``)."""
LOCK_SPIN_S = 0.0001
"""A WAL write that found another writer's lock tries again after this pause, then after
twice as long, and so on, pausing the event loop's thread for well under a millisecond in
all (another writer's save holds the lock for about a tenth of one)..."""
LOCK_POLL_S = 0.001
"""...then every this often, awaiting in between (the event loop runs other tasks)."""
LOCK_POLL_BUDGET_S = 0.1
"""How long it tries so; a lock held longer (a long write elsewhere) is waited for on a
thread, with the busy timeout and retries of any thread call."""
MISSED: tuple[bool, Any] = (False, None)
"""Nothing ran: take the plain way."""
LOCKED: tuple[bool, Any] = (False, "locked")
"""``BEGIN IMMEDIATE`` of an inline write found the write lock taken: nothing ran."""


class InlineCalls(SQLiteFile):
    """A ``SQLiteFile`` whose calls may run on the event loop's thread (``inline``: False
    leaves every call to a thread, the plain way)."""

    inline = True

    async def try_inline(
        self, kind: str, fn: Callable[[sqlite3.Connection], Any]
    ) -> tuple[bool, Any]:
        """Run the call here when it can run without waiting: ``(True, result)``, else
        ``MISSED`` (nothing ran)."""
        if not self.inline or self._slow[kind == WRITE] or (kind == WRITE and not self.wal):
            return MISSED
        if kind == WRITE:
            return await self._write_inline(fn)
        return self._inline(kind, fn)

    def _inline(self, kind: str, fn: Callable[[sqlite3.Connection], Any]) -> tuple[bool, Any]:
        """Run the call here on the event loop's thread, when the store has nothing queued or
        running and a connection is at hand, and no lock is in the way: a lock held by
        another connection is never waited for here (``MISSED``, or ``LOCKED`` for a
        write that found the write lock taken: queue it instead)."""
        taken = self._take_inline()
        if taken is None:
            return MISSED
        try:
            return self._run_inline(taken[0], kind, fn)
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from exc
        finally:
            self._put_inline(*taken)

    async def _write_inline(self, fn: Callable[[sqlite3.Connection], Any]) -> tuple[bool, Any]:
        """``_inline`` for a write, which waits on the event loop while another connection
        holds the write lock: it keeps the store's turn and its connection, and tries again
        every ``LOCK_POLL_S`` for up to ``LOCK_POLL_BUDGET_S`` (``MISSED`` after: a thread
        waits for the rest). A cancelled wait wrote nothing."""
        taken = self._take_inline()
        if taken is None:
            return MISSED
        try:
            waited, pause = 0.0, LOCK_SPIN_S
            while True:
                try:
                    found = self._run_inline(taken[0], WRITE, fn)
                except sqlite3.DatabaseError as exc:
                    raise self._error(exc) from exc
                if found is not LOCKED:
                    return found
                if waited >= LOCK_POLL_BUDGET_S:
                    return MISSED
                if pause < LOCK_POLL_S:
                    time.sleep(pause)  # noqa: ASYNC251 - well under the loop's 1 ms timer
                else:
                    await asyncio.sleep(pause)
                waited += pause
                pause = min(pause * 2, LOCK_POLL_S)
        finally:
            self._put_inline(*taken)

    def _take_inline(self) -> tuple[sqlite3.Connection, _conns.Key | None] | None:
        """The store's turn and a connection for a call on the event loop's thread, when
        nothing of the store's is queued or running and one is at hand (``_put_inline``
        it after); ``None``: queue the call."""
        if not self._calls.claim():
            return None
        conn, key = self._conn, self._key
        if conn is None and self._idle is None:  # the store's first call
            try:
                first = self._first_inline()
            except BaseException:
                self._calls.release()
                raise
            if first is not None:
                return first
        elif conn is None:
            try:
                return self._idle.pop(), key  # type: ignore[union-attr]
            except IndexError:  # all idle ones taken: a thread opens one
                pass
        else:
            return conn, key
        self._calls.release()
        return None

    def _put_inline(self, conn: sqlite3.Connection, key: _conns.Key | None) -> None:
        try:
            if conn is not self._conn and key is not None:
                self._give_back(conn, key)
        finally:
            self._calls.release()

    def _first_inline(self) -> tuple[sqlite3.Connection, _conns.Key] | None:
        """The store's first connection, taken here without waiting: an idle one of its
        file, or a new one. ``None`` (a thread does it) when the file is not there yet,
        another thread is opening a connection, the schema needs a change, a WAL store's
        file is not in WAL mode yet, or a lock is in the way."""
        if self.read_only:
            return None
        key = _conns.key_of(self.path, self.wal)
        if key is None:  # creating the file is a write
            return None
        conn = _conns.take(key)
        fresh = conn is None
        if conn is None:
            lock = opening()
            if not lock.acquire(blocking=False):
                return None
            try:
                if not _conns.count_open(self.path):
                    check_header(self.path)
                conn = connect(self.path)
                _conns.opened(key)
            finally:
                lock.release()
        try:
            if fresh:
                rest(conn)
            ready = self._schema_current(conn)
            if ready and fresh:
                conn.execute("PRAGMA foreign_keys = ON")
                ready = not self.wal or wal_mode(conn, switch=False).lower() == "wal"
        except sqlite3.DatabaseError:
            ready = False
        if not ready:
            if fresh:
                _conns.close(conn, key)
            else:
                _conns.give_back(key, conn)
            return None
        self._key = key
        self._idle = _conns.join(key)
        self._leave = weakref.finalize(self, _conns.leave, key)
        return conn, key

    def _run_inline(
        self, conn: sqlite3.Connection, kind: str, fn: Callable[[sqlite3.Connection], Any]
    ) -> tuple[bool, Any]:
        """``fn`` on ``conn``, at rest (no busy timeout: a lock answers "busy" at once)."""
        started = time.perf_counter()
        if kind == WRITE:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_locked(exc):
                    return LOCKED  # nothing ran
                raise
            # the write lock is held, and in WAL mode nothing after it waits for a lock
            # (readers never block a WAL commit)
            result = finish(conn, fn)
        else:
            # SQLite work past the budget is interrupted, to run again on a thread
            deadline = started + INLINE_READ_BUDGET_S
            conn.set_progress_handler(lambda: time.perf_counter() > deadline, 1_000)
            try:
                result = self._job(kind, fn)(conn)
            except sqlite3.OperationalError as exc:
                # a read changes nothing: it runs again, whole, on a thread
                if not (is_locked(exc) or "interrupted" in str(exc)):
                    raise
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                self._slow[False] = True
                return MISSED
            finally:
                conn.set_progress_handler(None, 0)
        self._slow[kind == WRITE] = time.perf_counter() - started > INLINE_SLOW_S
        return True, result
