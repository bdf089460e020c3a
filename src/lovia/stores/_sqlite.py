"""The SQLite plumbing both SQLite stores share: connections, one queue of calls per store,
versioned schema, bounded retries on a busy file.

A writable store takes a connection for each call from the idle ones of its file
(``_conns``) and gives it back after, so stores opened per job read through a warm cache.

Every statement goes through ``SQLiteDatabase.read`` / ``write`` (the one execute seam), so
tracing or counting queries lives here. A store runs one call at a time, in the order they
were made (``_calls``). A call that cannot wait runs right away on the event loop's thread:
a read, or a write of a WAL store (no fsync at commit), when the store has nothing queued or
running and a connection is at hand, since a thread hop costs more than the call itself.
It never blocks on a lock there: a connection at rest has no busy timeout, so a file locked
by another connection answers "busy" at once. A read then goes to a thread that waits for the
lock. A write keeps its turn and tries again from the event loop: after pauses of a tenth of
a millisecond, doubling, that hold up the loop for under a millisecond in all (another
process's save holds the lock for about a tenth of one), then every millisecond, awaiting in
between; a lock held longer than ``LOCK_POLL_BUDGET_S`` is waited for on a thread. Another
writer's commit is seen within a fraction of a millisecond, where SQLite's own busy handler
sleeps 1, 2, 5, 10 ms and a thread costs two wake-ups. Everything else (opening, a
default-journal write that syncs the disk, a call after a slow one) runs on a thread, with
the busy timeout set for that call.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from urllib.parse import quote

from ..errors import SchemaError, StoreError, UserError, UserTypeError
from . import _conns, _legacy
from ._calls import CallQueue, on_fork
from ._lifetime import ClosingStore
from ._schema import MetaSql, Migrations, migrate, version_of

__all__ = ["Migrations", "SQLiteDatabase", "SQLiteStore"]

T = TypeVar("T")
S = TypeVar("S", bound="SQLiteStore")
"""Schema version -> the statements that bring version ``v - 1`` to ``v`` (1 = create)."""

_SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 5_000
_LOCK_RETRIES = 5
_OPEN_LOCK = threading.Lock()
"""Held while a connection is opened: no other opens while a file's header is read."""
INLINE_SLOW_S = 0.002
"""A call that took longer than this sends the store's next call of its kind (read or write)
to a thread: a big read (a long session read cold) does not hold up the event loop again."""
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
CHECKPOINT_EVERY = 500
"""WAL stores fold the ``-wal`` file back into the database (a passive checkpoint, on a
thread) after this many writes to the file, instead of inside the commit that crosses
SQLite's threshold of 1,000 pages (a checkpoint save writes about 2), which would sync the
disk on the event loop."""
_READ, _SNAPSHOT, _WRITE = "read", "snapshot", "write"
_MISSED: tuple[bool, Any] = (False, None)
_LOCKED: tuple[bool, Any] = (False, "locked")
"""``BEGIN IMMEDIATE`` of an inline write found the write lock taken: nothing ran."""


def _forget_locks() -> None:
    """In a forked child: a thread of the parent may have held the open lock."""
    global _OPEN_LOCK
    _OPEN_LOCK = threading.Lock()
    _conns.forget()


on_fork(_forget_locks)


class SQLiteDatabase:
    """One SQLite file used by one store, with the store's schema component checked."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        wal: bool,
        component: str,
        migrations: Migrations,
        read_only: bool = False,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise UserTypeError(
                f"a SQLite path must be str or pathlib.Path, got {type(path).__name__}",
                hint="pass the file's name, like SQLiteSession('chat.db')",
            )
        self.path = os.fspath(path)
        if not self.path:
            raise UserError("the SQLite path is empty", hint="pass a file name like 'chat.db'")
        self.wal = bool(wal) and not read_only
        self.read_only = bool(read_only)
        self.component = component
        self.migrations = migrations
        self.version = max(migrations)
        self._conn: sqlite3.Connection | None = None  # read-only, or a file with no inode
        self._conn_key: _conns.Key | None = None
        self._calls = CallQueue()
        self._key: _conns.Key | None = None  # the file this store uses, from its first call
        self._leave: weakref.finalize | None = None  # type: ignore[type-arg]
        self._idle: list[sqlite3.Connection] | None = None  # the file's, once this store uses it
        self._closed = False
        self._slow = [False, False]  # the last read, write took over INLINE_SLOW_S
        self._began = 0.0  # when the write on a thread got the write lock
        self.legacy = False  # opened read-only on a file lovia 0.9.119 wrote

    # -- the execute seam -------------------------------------------------------------------

    async def read(self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = True) -> T:
        """Run ``fn(conn)`` (no transaction beyond SQLite's own); ``inline=False``: always
        on a thread (a call that may run long in Python)."""
        return await self._submit(_READ, fn, inline)

    async def read_snapshot(
        self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = True
    ) -> T:
        """Run ``fn(conn)``'s several SELECTs in one read transaction: one consistent view,
        so a reader never pairs one save's head with another save's entries."""
        return await self._submit(_SNAPSHOT, fn, inline)

    async def write(self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = True) -> T:
        """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction; retried while locked."""
        if self.read_only:
            raise UserError(
                f"the store on {self.path!r} was opened read-only",
                hint="open it without read_only=True to change it",
            )
        return await self._submit(_WRITE, fn, inline)

    def write_now(self, fn: Callable[[sqlite3.Connection], T]) -> tuple[bool, T | None]:
        """Run the write ``fn(conn)`` here and now when it can run on the event loop's thread
        without waiting (a WAL store with nothing queued, a connection at hand, the file not
        locked): ``(True, result)``, committed before this returns. ``(False, None)``: nothing
        ran; ``write`` it instead."""
        if self._closed or self.read_only or not self.wal or self._slow[True]:
            return False, None
        done, result = self._inline(_WRITE, fn)
        if not done:
            return _MISSED
        if self._key is not None and _conns.wrote(self._key, CHECKPOINT_EVERY):
            self._fold_wal()
        return done, result

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # queued behind the calls already made, so none of them loses its connection
        await asyncio.wrap_future(self._calls.submit(self._close_conn))

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._release(conn)
        if self._leave is not None:
            self._leave()  # the last store of the file closes its idle connections

    async def _submit(
        self, kind: str, fn: Callable[[sqlite3.Connection], T], inline: bool = True
    ) -> T:
        if self._closed:
            raise UserError(f"the store on {self.path!r} is closed", hint="open a new store")
        done, result = _MISSED
        if inline and (kind != _WRITE or self.wal) and not self._slow[kind == _WRITE]:
            if kind == _WRITE:
                done, result = await self._write_inline(fn)
            else:
                done, result = self._inline(kind, fn)
        if not done:
            job = self._job(kind, fn)
            result = await asyncio.wrap_future(self._calls.submit(lambda: self._call(kind, job)))
        if kind == _WRITE and self.wal and self._key is not None:
            if _conns.wrote(self._key, CHECKPOINT_EVERY):
                self._fold_wal()
        return result  # type: ignore[no-any-return]

    def _job(self, kind: str, fn: Callable[[sqlite3.Connection], T]) -> Callable[[Any], T]:
        if kind == _WRITE:
            return lambda conn: self._transaction(conn, fn)
        if kind == _SNAPSHOT:
            return lambda conn: _snapshot(conn, fn)
        return fn

    def _inline(self, kind: str, fn: Callable[[sqlite3.Connection], Any]) -> tuple[bool, Any]:
        """Run the call here on the event loop's thread, when the store has nothing queued or
        running and a connection is at hand, and no lock is in the way: a lock held by
        another connection is never waited for here (``_MISSED``, or ``_LOCKED`` for a
        write that found the write lock taken: queue it instead)."""
        taken = self._take_inline()
        if taken is None:
            return _MISSED
        try:
            return self._run_inline(taken[0], kind, fn)
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from exc
        finally:
            self._put_inline(*taken)

    async def _write_inline(self, fn: Callable[[sqlite3.Connection], Any]) -> tuple[bool, Any]:
        """``_inline`` for a write, which waits on the event loop while another connection
        holds the write lock: it keeps the store's turn and its connection, and tries again
        every ``LOCK_POLL_S`` for up to ``LOCK_POLL_BUDGET_S`` (``_MISSED`` after: a thread
        waits for the rest). A cancelled wait wrote nothing."""
        taken = self._take_inline()
        if taken is None:
            return _MISSED
        try:
            waited, pause = 0.0, LOCK_SPIN_S
            while True:
                try:
                    found = self._run_inline(taken[0], _WRITE, fn)
                except sqlite3.DatabaseError as exc:
                    raise self._error(exc) from exc
                if found is not _LOCKED:
                    return found
                if waited >= LOCK_POLL_BUDGET_S:
                    return _MISSED
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
            if not _OPEN_LOCK.acquire(blocking=False):
                return None
            try:
                if not _conns.count_open(self.path):
                    _check_header(self.path)
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                _conns.opened(key)
            finally:
                _OPEN_LOCK.release()
        try:
            if fresh:
                _rest(conn)
            ready = self._schema_current(conn)
            if ready and fresh:
                conn.execute("PRAGMA foreign_keys = ON")
                ready = not self.wal or _wal_mode(conn, switch=False).lower() == "wal"
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
        if kind == _WRITE:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _is_locked(exc):
                    return _LOCKED  # nothing ran
                raise
            # the write lock is held, and in WAL mode nothing after it waits for a lock
            # (readers never block a WAL commit)
            result = _finish(conn, fn)
        else:
            # SQLite work past the budget is interrupted, to run again on a thread
            deadline = started + INLINE_READ_BUDGET_S
            conn.set_progress_handler(lambda: time.perf_counter() > deadline, 1_000)
            try:
                result = self._job(kind, fn)(conn)
            except sqlite3.OperationalError as exc:
                # a read changes nothing: it runs again, whole, on a thread
                if not (_is_locked(exc) or "interrupted" in str(exc)):
                    raise
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                self._slow[False] = True
                return _MISSED
            finally:
                conn.set_progress_handler(None, 0)
        self._slow[kind == _WRITE] = time.perf_counter() - started > INLINE_SLOW_S
        return True, result

    def _fold_wal(self) -> None:
        """Queue a passive checkpoint that folds the ``-wal`` file into the database (on a
        thread). Queued, not run beside the store's calls: a checkpoint that this store's
        saves keep outrunning never lets SQLite start the ``-wal`` file over."""
        if not self._closed:
            # nobody awaits it (a failure is dropped: the next fold retries)
            self._calls.submit(lambda: self._call(None, _checkpoint))

    def _call(self, kind: str | None, job: Callable[[sqlite3.Connection], T]) -> T:
        try:
            if self._conn is not None or self.read_only:
                return self._timed(kind, job, self._conn or self._open())
            conn, key = self._borrow()
            if key is None:  # no file to share it by (":memory:"): this store keeps it
                self._conn, self._conn_key = conn, None
                return self._timed(kind, job, conn)
            try:
                return self._timed(kind, job, conn)
            finally:
                self._give_back(conn, key)
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from exc

    def _timed(
        self, kind: str | None, job: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection
    ) -> T:
        """``job(conn)`` with the busy timeout set, noting whether it was slow (opening a
        connection and waiting for the write lock are not counted)."""
        started = self._began = time.perf_counter()
        try:
            with _patient(conn):
                return job(conn)
        finally:
            if kind is not None:
                took = time.perf_counter() - max(started, self._began)
                self._slow[kind == _WRITE] = took > INLINE_SLOW_S

    def _borrow(self) -> tuple[sqlite3.Connection, _conns.Key | None]:
        """A connection for one call: an idle one on this store's file when there is one
        (its schema checked once per store), else a new one."""
        idle = self._idle
        if idle is not None:  # not the first call: the file's idle list is this store's too
            try:
                return idle.pop(), self._key
            except IndexError:
                conn = self._open()
                return conn, self._conn_key
        # this store's first call
        key = _conns.key_of(self.path, self.wal)
        pooled = _conns.take(key) if key is not None else None
        if pooled is None:
            conn = self._open()
            key = self._conn_key
        else:
            conn = pooled
            try:
                with _patient(conn):
                    self._check_schema(conn)
            except BaseException:
                _conns.give_back(key, conn)
                raise
        if key is not None:
            self._key = key
            self._idle = _conns.join(key)
            self._leave = weakref.finalize(self, _conns.leave, key)
        return conn, key

    def _give_back(self, conn: sqlite3.Connection, key: _conns.Key) -> None:
        idle = self._idle
        if (
            idle is not None
            and key == self._key
            and not conn.in_transaction
            and len(idle) < _conns.MAX_IDLE
        ):
            idle.append(conn)
        else:
            _conns.give_back(key, conn)

    def _error(self, exc: sqlite3.DatabaseError) -> StoreError:
        if self.read_only and _is_readonly(exc):
            return StoreError(
                f"{self.path!r} cannot be read without writing it: a write to it was "
                "interrupted and must be rolled back first",
                hint="open it once for writing (any lovia command that changes it, or "
                "'lovia migrate PATH'), which finishes the rollback; this read changed nothing",
            )
        return _store_error(self.path, exc)

    def _transaction(self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
        for attempt in range(_LOCK_RETRIES):
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if _is_locked(exc) and attempt + 1 < _LOCK_RETRIES:
                    time.sleep(0.01 * (2**attempt))
                    continue
                raise
            self._began = time.perf_counter()
            return _finish(conn, fn)
        raise AssertionError("unreachable")

    # -- opening and the schema -------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """A new connection, checked and set up; read-only stores keep theirs as ``_conn``,
        others have it in hand with its file's key in ``_conn_key``."""
        with _OPEN_LOCK:
            # Closing any descriptor of a file drops every POSIX lock this process holds on
            # it, so the header is read only while no other store here has the file open.
            if not _conns.count_open(self.path):
                _check_header(self.path)
            if self.read_only:
                conn = _connect_read_only(self.path)
            else:
                conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._conn_key = _conns.key_of(self.path, self.wal)
            _conns.opened(self._conn_key)
        try:
            with _patient(conn):  # left at rest
                conn.execute("PRAGMA foreign_keys = ON")
                if self.read_only:
                    self._prepare_read_only(conn)
                else:
                    # a new, empty file holds nothing to leave unchanged: switched to WAL
                    # first, its schema is a WAL commit (four disk syncs fewer than a
                    # rollback journal's); any other file keeps the schema-first order
                    new = self.wal and conn.execute("PRAGMA page_count").fetchone()[0] == 0
                    mode = _wal_mode(conn, switch=True) if new else "wal"
                    self._check_schema(conn)
                    if self.wal and not new:
                        mode = _wal_mode(conn, switch=True)
                    if mode.lower() != "wal":
                        raise StoreError(f"{self.path!r}: could not switch to WAL (got {mode!r})")
        except sqlite3.DatabaseError as exc:
            self._release(conn)
            raise self._error(exc) from exc
        except BaseException:
            self._release(conn)
            raise
        if self.read_only:
            self._conn = conn
        return conn

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        """Migrate the file to this store's schema unless it is current (one read)."""
        if not self._schema_current(conn):  # else nothing to migrate: no write lock
            # a file lovia 0.9.119 wrote is migrated first, in its own transaction
            _legacy.migrate(conn, self.path)
            # schema first: switching to WAL rewrites the file header, and a refused file
            # (foreign or newer) must be left byte-for-byte unchanged
            self._transaction(conn, self._ensure_schema)

    def _release(self, conn: sqlite3.Connection) -> None:
        key, self._conn_key = self._conn_key, None
        _conns.close(conn, key)

    def _prepare_read_only(self, conn: sqlite3.Connection) -> None:
        """Check the file without writing it; what it lacks is made in ``TEMP`` tables.

        A lovia file missing this store's tables reads as empty, a 0.9.119 file is read
        through a converted copy of its rows, and anything else is refused.
        """
        tables = _legacy.tables_of(conn)
        if "lovia_meta" not in tables:
            if _legacy.is_legacy(tables):
                _legacy.convert(conn, (self.component,), temp=True)
                self.legacy = True
                conn.execute("PRAGMA query_only = ON")
                return
            foreign = sorted(t for t in tables if not t.startswith("sqlite_"))
            raise SchemaError(
                f"{self.path!r} is not a lovia database"
                + (f" (it has tables {', '.join(foreign[:5])})" if foreign else " (it is empty)"),
                hint="point --db at a database lovia wrote; this file was left as it was",
            )
        key = f"schema:{self.component}"
        row = conn.execute("SELECT value FROM main.lovia_meta WHERE key = ?", (key,)).fetchone()
        current = version_of(row)
        if current > self.version:
            raise self._too_new(current)
        if current == 0:  # nothing of this store's in the file yet: it reads as empty
            conn.execute("CREATE TEMP TABLE lovia_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            for version in sorted(self.migrations):
                for statement in self.migrations[version]:
                    conn.execute(
                        statement.strip().replace("CREATE TABLE ", "CREATE TEMP TABLE ", 1)
                    )
        conn.execute("PRAGMA query_only = ON")

    def _schema_current(self, conn: sqlite3.Connection) -> bool:
        """True when the file already holds this store's schema at this lovia's version (one
        read; anything else, a missing table included, goes the checked way)."""
        try:
            row = conn.execute(
                "SELECT value FROM lovia_meta WHERE key = ?", (f"schema:{self.component}",)
            ).fetchone()
        except sqlite3.DatabaseError:
            return False
        return row is not None and row[0] == str(self.version)

    def _ensure_schema(self, conn: sqlite3.Connection) -> None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "lovia_meta" not in tables:
            foreign = sorted(t for t in tables if not t.startswith("sqlite_"))
            if foreign:
                raise SchemaError(
                    f"{self.path!r} is not a lovia database (it has tables "
                    f"{', '.join(foreign[:5])})",
                    hint="point the store at a new file; lovia will not change this one",
                )
            conn.execute("CREATE TABLE lovia_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

        run = migrate(self.component, self.version, self.migrations, _META, self._too_new)
        for step in run:
            cur = conn.execute(step.sql, step.params)
            run.reply = cur.fetchone() if step.fetch else None

    def _too_new(self, found: int) -> SchemaError:
        return SchemaError(
            f"{self.path!r} holds a {self.component} schema of version {found}; this "
            f"lovia reads up to version {self.version}",
            hint="upgrade lovia to open this file; it was left unchanged",
        )


_META = MetaSql(
    read="SELECT value FROM lovia_meta WHERE key = ?",
    write="INSERT INTO lovia_meta (key, value) VALUES (?, ?) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
)


class SQLiteStore(ClosingStore):
    """What every SQLite store has: its constructor, ``path``, ``close`` and ``async with``;
    a store names its schema component and migrations."""

    _db: SQLiteDatabase
    _component: ClassVar[str]
    _migrations: ClassVar[Migrations]

    def __init__(
        self, path: str | os.PathLike[str], *, wal: bool = False, read_only: bool = False
    ) -> None:
        self._db = SQLiteDatabase(
            path,
            wal=wal,
            component=self._component,
            migrations=self._migrations,
            read_only=read_only,
        )

    @property
    def path(self) -> str:
        return self._db.path

    @property
    def needs_migration(self) -> bool:
        """True when this read-only store read a file lovia 0.9.119 wrote, as it is: opening
        it for writing (or ``lovia migrate``) converts it."""
        return self._db.legacy


def _finish(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``fn`` in the transaction just begun and commit, or roll back on any error."""
    try:
        result = fn(conn)
        conn.execute("COMMIT")
    except BaseException:
        # SQLite rolls back by itself on a full disk or an I/O error; a second ROLLBACK
        # would fail and hide the error the caller must see.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def _snapshot(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    conn.execute("BEGIN")
    try:
        return fn(conn)
    finally:
        conn.execute("COMMIT")


def _rest(conn: sqlite3.Connection) -> None:
    """A connection at rest waits for no lock: a call on the event loop's thread meets a
    locked file as "busy" at once (``_patient`` sets the timeout for a call on a thread)."""
    conn.execute("PRAGMA busy_timeout = 0")


@contextmanager
def _patient(conn: sqlite3.Connection) -> Iterator[None]:
    """The busy timeout set for a while (a call on a thread, opening), then at rest again."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    try:
        yield
    finally:
        _rest(conn)


def _wal_mode(conn: sqlite3.Connection, *, switch: bool) -> str:
    """The file's journal mode, first switched to WAL when ``switch`` (else only read); in
    WAL mode the connection also gets ``synchronous=NORMAL`` and no automatic checkpoint
    (see ``CHECKPOINT_EVERY``)."""
    if switch:
        mode = _switch_to_wal(conn)
    else:
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    if mode.lower() == "wal":
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    return mode


def _checkpoint(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _switch_to_wal(conn: sqlite3.Connection) -> str:
    """``PRAGMA journal_mode = WAL``, retried while locked: the switch needs the file to
    itself, and SQLite answers "locked" at once (no busy wait) while another connection that
    is opening the same file at the same moment holds a lock on it."""
    for attempt in range(_LOCK_RETRIES * 4):
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if not _is_locked(exc) or attempt + 1 == _LOCK_RETRIES * 4:
                raise
            time.sleep(min(0.01 * (2**attempt), 0.25))
    raise AssertionError("unreachable")


def _connect_read_only(path: str) -> sqlite3.Connection:
    """A connection that cannot change the file: ``mode=ro``.

    A file in WAL mode with no ``-wal`` beside it (no writer has it open) is read as
    ``immutable``: a read-only connection would otherwise leave new ``-wal`` and ``-shm``
    files next to it. A live writer's ``-shm`` index is shared as SQLite requires.
    """
    if not os.path.exists(path):
        raise UserError(
            f"no database at {path!r}",
            hint="pass the path of an existing database; reading never creates one",
        )
    options = "mode=ro"
    if _header_says_wal(path) and not os.path.exists(path + "-wal"):
        options += "&immutable=1"
    uri = f"file:{quote(os.fsencode(os.path.abspath(path)))}?{options}"  # any bytes a path holds
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def _header_says_wal(path: str) -> bool:
    """True when the file's header marks it as a WAL database (read/write version 2)."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return False
    return len(head) == 20 and head[18] == 2 and head[19] == 2


def _check_header(path: str) -> None:
    """Refuse a file that exists and is not SQLite, before sqlite3 touches it."""
    p = Path(path)
    if path == ":memory:" or not p.exists() or p.stat().st_size == 0:
        return
    try:
        with p.open("rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError as exc:  # a directory, no permission: ours to explain, not a raw OSError
        raise StoreError(
            f"cannot read {path!r}: {exc.strerror or exc}",
            hint="point the store at a readable file (it is created when missing)",
        ) from exc
    if head != _SQLITE_MAGIC:
        raise SchemaError(
            f"{path!r} is not a SQLite database",
            hint="point the store at a new file; lovia will not change this one",
        )


def _is_readonly(exc: sqlite3.DatabaseError) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text


def _unwritable_folder(path: str) -> str | None:
    """Why the folder of ``path`` cannot take the files SQLite makes next to a database (its
    journal), when that is why it could not be opened: a read-only filesystem, or a folder
    this user cannot write."""
    folder = os.path.dirname(os.path.abspath(path)) or "."
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "its folder is on a read-only filesystem"
    except OSError:
        return None
    if os.path.isdir(folder) and not os.access(folder, os.W_OK):
        return "this user cannot write its folder (read-only)"
    return None


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _store_error(path: str, exc: sqlite3.DatabaseError) -> StoreError:
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and _is_locked(exc):
        return StoreError(
            f"{path!r} stayed locked by another writer: {text}",
            hint="open every store on a shared file with wal=True",
        )
    if "malformed" in text or "not a database" in text or "file is encrypted" in text:
        return SchemaError(
            f"{path!r} is damaged or not a database: {text}",
            hint="restore the file from a backup, or point the store at a new file",
        )
    if "full" in text or "readonly" in text or "read-only" in text:
        return StoreError(
            f"could not write {path!r}: {text}",
            hint="free disk space or fix the file's permissions; nothing was half-written",
        )
    if "unable to open" in text:
        cause = _unwritable_folder(path)
        if cause is not None:
            return StoreError(
                f"could not open {path!r}: {cause} ({text}); nothing was written",
                hint="make the folder writable, or copy the file to a folder that is",
            )
        return StoreError(
            f"could not open {path!r}: {text}",
            hint="check that the folder exists and that this process may create files in it",
        )
    return StoreError(f"SQLite error on {path!r}: {text}")
