"""One SQLite connection: opening it, its locks and pragmas, its transactions, and what
its errors mean to a user (the plumbing under ``SQLiteFile`` and ``SQLiteDatabase``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from ..errors import SchemaError, StoreError, UserError
from . import _conns
from ._calls import on_fork

__all__ = [
    "BUSY_TIMEOUT_MS",
    "LOCK_RETRIES",
    "check_header",
    "checkpoint",
    "connect",
    "connect_read_only",
    "finish",
    "is_locked",
    "is_readonly",
    "opening",
    "patient",
    "rest",
    "snapshot",
    "store_error",
    "wal_mode",
]

T = TypeVar("T")

_SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 5_000
"""How long a call on a thread waits for another connection's lock."""
LOCK_RETRIES = 5
_OPEN_LOCK = threading.Lock()


def opening() -> threading.Lock:
    """Held while a connection is opened: no other opens while a file's header is read."""
    return _OPEN_LOCK


def _forget_locks() -> None:
    """In a forked child: a thread of the parent may have held the open lock."""
    global _OPEN_LOCK
    _OPEN_LOCK = threading.Lock()
    _conns.forget()


on_fork(_forget_locks)


def connect(path: str) -> sqlite3.Connection:
    """A new read-write connection to ``path``: no implicit transactions, any thread."""
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def finish(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
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


def snapshot(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``fn``'s reads in one read transaction (one consistent view)."""
    conn.execute("BEGIN")
    try:
        return fn(conn)
    finally:
        conn.execute("COMMIT")


def rest(conn: sqlite3.Connection) -> None:
    """A connection at rest waits for no lock: a call on the event loop's thread meets a
    locked file as "busy" at once (``patient`` sets the timeout for a call on a thread)."""
    conn.execute("PRAGMA busy_timeout = 0")


@contextmanager
def patient(conn: sqlite3.Connection) -> Iterator[None]:
    """The busy timeout set for a while (a call on a thread, opening), then at rest again."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    try:
        yield
    finally:
        rest(conn)


def wal_mode(conn: sqlite3.Connection, *, switch: bool) -> str:
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


def checkpoint(conn: sqlite3.Connection) -> None:
    """A passive checkpoint: the ``-wal`` file folded into the database, as far as it can."""
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _switch_to_wal(conn: sqlite3.Connection) -> str:
    """``PRAGMA journal_mode = WAL``, retried while locked: the switch needs the file to
    itself, and SQLite answers "locked" at once (no busy wait) while another connection that
    is opening the same file at the same moment holds a lock on it."""
    for attempt in range(LOCK_RETRIES * 4):
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if not is_locked(exc) or attempt + 1 == LOCK_RETRIES * 4:
                raise
            time.sleep(min(0.01 * (2**attempt), 0.25))
    raise AssertionError("unreachable")


def connect_read_only(path: str) -> sqlite3.Connection:
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


def check_header(path: str) -> None:
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


def is_readonly(exc: sqlite3.DatabaseError) -> bool:
    """Whether ``exc`` says the file could not be written."""
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


def is_locked(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` says another connection holds a lock."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def store_error(path: str, exc: sqlite3.DatabaseError) -> StoreError:
    """The ``StoreError`` a user reads for SQLite's ``exc`` on ``path``, with what to do."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and is_locked(exc):
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
