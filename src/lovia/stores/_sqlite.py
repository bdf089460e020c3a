"""The SQLite plumbing both SQLite stores share: the execute seam over one store's file,
one queue of calls per store, versioned schema, bounded retries on a busy file.

A writable store takes a connection for each call from the idle ones of its file
(``_conns``) and gives it back after, so stores opened per job read through a warm cache.

Every statement goes through ``SQLiteDatabase.read`` / ``write`` (the one execute seam), so
tracing or counting queries lives here. A store runs one call at a time, in the order they
were made (``_calls``). Each call takes one of two ways: the fast way, on the event loop's
thread when it can run there without waiting (``_sqlite_inline``), else the plain way, on a
thread with the busy timeout set (``_sqlite_file``), which every call can take: the fast
way is a speed-up behind ``try_inline``, never needed for a call to be right. Connections,
pragmas and errors are in ``_sqlite_conn``.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from typing import ClassVar, TypeVar

from ..errors import UserError
from . import _conns
from ._lifetime import ClosingStore
from ._schema import Migrations
from ._sqlite_conn import checkpoint
from ._sqlite_file import READ, SNAPSHOT, WRITE
from ._sqlite_inline import MISSED, InlineCalls

__all__ = ["Migrations", "SQLiteDatabase", "SQLiteStore"]

T = TypeVar("T")
S = TypeVar("S", bound="SQLiteStore")

CHECKPOINT_EVERY = 500
"""WAL stores fold the ``-wal`` file back into the database (a passive checkpoint, on a
thread) after this many writes to the file, instead of inside the commit that crosses
SQLite's threshold of 1,000 pages (a checkpoint save writes about 2), which would sync the
disk on the event loop."""


class SQLiteDatabase(InlineCalls):
    """One SQLite file used by one store, with the store's schema component checked: the
    execute seam every statement of the store goes through."""

    async def read(self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = True) -> T:
        """Run ``fn(conn)`` (no transaction beyond SQLite's own); ``inline=False``: always
        on a thread (a call that may run long in Python)."""
        return await self._submit(READ, fn, inline)

    async def read_snapshot(
        self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = True
    ) -> T:
        """Run ``fn(conn)``'s several SELECTs in one read transaction: one consistent view,
        so a reader never pairs one save's head with another save's entries."""
        return await self._submit(SNAPSHOT, fn, inline)

    async def write(self, fn: Callable[[sqlite3.Connection], T], *, inline: bool = True) -> T:
        """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction; retried while locked."""
        if self.read_only:
            raise UserError(
                f"the store on {self.path!r} was opened read-only",
                hint="open it without read_only=True to change it",
            )
        return await self._submit(WRITE, fn, inline)

    def write_now(self, fn: Callable[[sqlite3.Connection], T]) -> tuple[bool, T | None]:
        """Run the write ``fn(conn)`` here and now when it can run on the event loop's thread
        without waiting (a WAL store with nothing queued, a connection at hand, the file not
        locked): ``(True, result)``, committed before this returns. ``(False, None)``: nothing
        ran; ``write`` it instead."""
        if self._closed or self.read_only or not self.wal or not self.inline or self._slow[True]:
            return False, None
        done, result = self._inline(WRITE, fn)
        if not done:
            return MISSED
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
        done, result = await self.try_inline(kind, fn) if inline else MISSED
        if not done:
            job = self._job(kind, fn)
            result = await asyncio.wrap_future(self._calls.submit(lambda: self._call(kind, job)))
        if kind == WRITE and self.wal and self._key is not None:
            if _conns.wrote(self._key, CHECKPOINT_EVERY):
                self._fold_wal()
        return result  # type: ignore[no-any-return]

    def _fold_wal(self) -> None:
        """Queue a passive checkpoint that folds the ``-wal`` file into the database (on a
        thread). Queued, not run beside the store's calls: a checkpoint that this store's
        saves keep outrunning never lets SQLite start the ``-wal`` file over."""
        if not self._closed:
            # nobody awaits it (a failure is dropped: the next fold retries)
            self._calls.submit(lambda: self._call(None, checkpoint))


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
