"""A SQLite file as one store uses it: its connections (borrowed from the file's idle ones,
``_conns``), its schema checked and migrated when a connection opens, and each call run
on a thread with the busy timeout set: the plain way every call can take. ``InlineCalls``
adds the fast way, ``SQLiteDatabase`` the execute seam over both.
"""

from __future__ import annotations

import os
import sqlite3
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import SchemaError, StoreError, UserError, UserTypeError, UserValueError
from . import _conns, _legacy
from ._calls import CallQueue
from ._schema import MetaSql, Migrations, migrate, version_of
from ._sqlite_conn import (
    LOCK_RETRIES,
    check_header,
    connect,
    connect_read_only,
    finish,
    is_locked,
    is_readonly,
    opening,
    patient,
    snapshot,
    store_error,
    wal_mode,
)

__all__ = ["INLINE_SLOW_S", "READ", "SNAPSHOT", "WRITE", "SQLiteFile"]

T = TypeVar("T")

READ, SNAPSHOT, WRITE = "read", "snapshot", "write"
"""The kinds of call: a read, reads in one transaction, a write transaction."""
INLINE_SLOW_S = 0.002
"""A call that took longer than this sends the store's next call of its kind (read or write)
to a thread: a big read (a long session read cold) does not hold up the event loop again."""


class SQLiteFile:
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
        if "\x00" in self.path:  # sqlite3 and os raise a bare "embedded null byte"
            raise UserValueError(
                f"the SQLite path {self.path!r} contains a NUL character",
                hint="pass the file's name without NUL characters, like 'chat.db'",
            )
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

    def _job(self, kind: str, fn: Callable[[sqlite3.Connection], T]) -> Callable[[Any], T]:
        if kind == WRITE:
            return lambda conn: self._transaction(conn, fn)
        if kind == SNAPSHOT:
            return lambda conn: snapshot(conn, fn)
        return fn

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
            with patient(conn):
                return job(conn)
        finally:
            if kind is not None:
                took = time.perf_counter() - max(started, self._began)
                self._slow[kind == WRITE] = took > INLINE_SLOW_S

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
                with patient(conn):
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
        if self.read_only and is_readonly(exc):
            return StoreError(
                f"{self.path!r} cannot be read without writing it: a write to it was "
                "interrupted and must be rolled back first",
                hint="open it once for writing (any lovia command that changes it, or "
                "'lovia migrate PATH'), which finishes the rollback; this read changed nothing",
            )
        return store_error(self.path, exc)

    def _transaction(self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
        for attempt in range(LOCK_RETRIES):
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if is_locked(exc) and attempt + 1 < LOCK_RETRIES:
                    time.sleep(0.01 * (2**attempt))
                    continue
                raise
            self._began = time.perf_counter()
            return finish(conn, fn)
        raise AssertionError("unreachable")

    # -- opening and the schema -------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """A new connection, checked and set up; read-only stores keep theirs as ``_conn``,
        others have it in hand with its file's key in ``_conn_key``."""
        with opening():
            # Closing any descriptor of a file drops every POSIX lock this process holds on
            # it, so the header is read only while no other store here has the file open.
            if not _conns.count_open(self.path):
                check_header(self.path)
            if self.read_only:
                conn = connect_read_only(self.path)
            else:
                conn = connect(self.path)
            self._conn_key = _conns.key_of(self.path, self.wal)
            _conns.opened(self._conn_key)
        try:
            with patient(conn):  # left at rest
                conn.execute("PRAGMA foreign_keys = ON")
                if self.read_only:
                    self._prepare_read_only(conn)
                else:
                    # a new, empty file holds nothing to leave unchanged: switched to WAL
                    # first, its schema is a WAL commit (four disk syncs fewer than a
                    # rollback journal's); any other file keeps the schema-first order
                    new = self.wal and conn.execute("PRAGMA page_count").fetchone()[0] == 0
                    mode = wal_mode(conn, switch=True) if new else "wal"
                    self._check_schema(conn)
                    if self.wal and not new:
                        mode = wal_mode(conn, switch=True)
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
            _legacy.mark_for_0_9_119(conn, _legacy.STORES_0_9_119)

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
