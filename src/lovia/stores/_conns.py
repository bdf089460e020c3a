"""The SQLite connections a process has open, and the idle ones its stores share.

A store takes a connection for each call and gives it back after, so the next store opened
on the same file (a worker or a replay that opens a store per job) reads through a connection
whose page cache is warm, instead of a new one that reads every page of the file again.
Connections are shared only between writable stores of the same file (device and inode)
with the same ``wal`` setting, never while one is in a transaction. When the last store of a
file is closed (or collected), its idle connections are closed, which is when SQLite folds
a ``-wal`` file back in and removes it, as before.

Every open connection of a file is counted, so the file's header is read by ``open()`` only
while this process holds no lock on it (closing any descriptor drops them all).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import deque

__all__ = [
    "MAX_IDLE",
    "Key",
    "count_open",
    "forget",
    "give_back",
    "join",
    "leave",
    "opened",
    "take",
    "wrote",
]

Key = tuple[int, int, bool]
"""(device, inode, wal) of a file a connection is open on."""

MAX_IDLE = 4
"""Idle connections kept per file; more are closed when given back."""

_LOCK = threading.Lock()
_OPEN: dict[tuple[int, int], int] = {}  # (device, inode) -> connections open on it
_IDLE: dict[Key, list[sqlite3.Connection]] = {}
_USERS: dict[Key, int] = {}  # stores that use the file and are not closed yet
_LEFT: deque[Key] = deque()  # stores collected while the lock was held: handled later


def key_of(path: str, wal: bool) -> Key | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, wal)


def count_open(path: str) -> int:
    """How many connections of this process are open on the file at ``path``."""
    key = key_of(path, False)
    with _LOCK:
        return 0 if key is None else _OPEN.get(key[:2], 0)


def opened(key: Key | None) -> None:
    """Count a connection just opened on ``key``'s file."""
    if key is not None:
        with _LOCK:
            _OPEN[key[:2]] = _OPEN.get(key[:2], 0) + 1


def close(conn: sqlite3.Connection, key: Key | None) -> None:
    """Close ``conn`` and stop counting it."""
    try:
        conn.close()
    finally:
        if key is not None:
            with _LOCK:
                _uncount(key)


def _uncount(key: Key) -> None:
    left = _OPEN.get(key[:2], 0) - 1
    if left > 0:
        _OPEN[key[:2]] = left
    else:
        _OPEN.pop(key[:2], None)


def take(key: Key) -> sqlite3.Connection | None:
    """An idle connection on ``key``'s file, now the caller's, or ``None``."""
    with _LOCK:
        doomed = _settle()
        idle = _IDLE.get(key)
        conn = idle.pop() if idle else None
    _close_all(doomed)
    return conn


def give_back(key: Key | None, conn: sqlite3.Connection) -> None:
    """Keep ``conn`` for the next call on its file, or close it (a transaction left open,
    no store of the file left, enough kept already)."""
    keep = key is not None and not conn.in_transaction
    with _LOCK:
        doomed = _settle()
        if keep and key is not None and _USERS.get(key, 0) > 0:
            idle = _IDLE.setdefault(key, [])
            if len(idle) < MAX_IDLE:
                idle.append(conn)
                conn = None  # type: ignore[assignment]
    _close_all(doomed)
    if conn is not None:
        close(conn, key)


def join(key: Key) -> list[sqlite3.Connection]:
    """A store starts using ``key``'s file; returns the file's idle connections.

    The list stays the file's until the store leaves, so the store may pop from it and append
    to it without the lock (single list operations are atomic): the fast way of ``take`` and
    ``give_back`` for every call after its first.
    """
    with _LOCK:
        _USERS[key] = _USERS.get(key, 0) + 1
        return _IDLE.setdefault(key, [])


def leave(key: Key) -> None:
    """A store of ``key``'s file is closed or collected: the last one closes the idle
    connections. Safe to call from a finalizer on any thread."""
    if not _LOCK.acquire(blocking=False):
        # the lock's holder may be this very thread (a collection while it is held)
        _LEFT.append(key)
        return
    try:
        _LEFT.append(key)
        doomed = _settle()
    finally:
        _LOCK.release()
    _close_all(doomed)


def _settle() -> list[tuple[sqlite3.Connection, Key]]:
    """Apply the stores that left; returns the idle connections no store needs (lock held)."""
    doomed: list[tuple[sqlite3.Connection, Key]] = []
    while _LEFT:
        key = _LEFT.popleft()
        users = _USERS.get(key, 0) - 1
        if users > 0:
            _USERS[key] = users
            continue
        _USERS.pop(key, None)
        doomed += [(conn, key) for conn in _IDLE.pop(key, [])]
    return doomed


def _close_all(doomed: list[tuple[sqlite3.Connection, Key]]) -> None:
    for conn, key in doomed:
        close(conn, key)


def forget() -> None:
    """In a forked child: the parent's connections are not ours to use or to close (closing
    one could fold a ``-wal`` file the parent still writes), so they are dropped unclosed."""
    global _LOCK
    _LOCK = threading.Lock()  # a thread of the parent may have held it
    _FORGOTTEN.extend(conn for idle in _IDLE.values() for conn in idle)
    _IDLE.clear()
    _USERS.clear()
    _LEFT.clear()
    _WRITES.clear()


_FORGOTTEN: list[sqlite3.Connection] = []


_WRITES: dict[Key, int] = {}


def wrote(key: Key, every: int) -> bool:
    """Count a write to ``key``'s file; True at every ``every``-th write of the process."""
    with _LOCK:
        count = _WRITES.get(key, 0) + 1
        _WRITES[key] = count % every
    return count >= every
