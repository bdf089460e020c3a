"""The threads SQLite stores run their calls on, and each store's queue of calls.

A store's calls run one at a time and in the order they were made. A call usually runs right
away on the event loop's own thread (``claim``: nothing of the store's is queued or running);
otherwise it waits in the store's queue, which runs on threads all stores of the process
share: the queue serializes a store's calls as a dedicated thread would, without starting a
thread for every store object (a worker that opens a store per job pays no thread start).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["CallQueue", "on_fork"]

T = TypeVar("T")

_POOL_THREADS = 64
"""At most this many stores of one process run a call at the same moment (each store runs
one at a time); threads start only when no idle one is there."""
_POOL_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None
_AFTER_FORK: list[Callable[[], None]] = []


def _pool() -> ThreadPoolExecutor:
    global _POOL
    pool = _POOL
    if pool is None:
        with _POOL_LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(_POOL_THREADS, thread_name_prefix="lovia-sqlite")
            pool = _POOL
    return pool


def on_fork(fn: Callable[[], None]) -> None:
    """Run ``fn`` in a forked child, after the pool is forgotten."""
    _AFTER_FORK.append(fn)


def _forget_pool() -> None:
    """In a forked child the parent's threads do not exist: start a fresh pool there."""
    global _POOL
    _POOL = None
    for fn in _AFTER_FORK:
        fn()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


class CallQueue:
    """One store's calls, run one at a time in the order they were made.

    ``submit`` queues a call for the shared pool. ``claim`` lets the caller run one call
    itself, on its own thread, when nothing of the store's is queued or running; until it
    ``release``s, every other call queues behind it, so the order is kept and a store's
    connection is never used by two threads at once.
    """

    __slots__ = ("_jobs", "_lock", "_running")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: deque[tuple[Future[Any], Callable[[], Any]]] = deque()
        self._running = False

    def claim(self) -> bool:
        """True when the caller may run a call now (then it must ``release``)."""
        with self._lock:
            if self._running:
                return False
            self._running = True
            return True

    def release(self) -> None:
        """End a claimed call; calls queued meanwhile (by other threads) start on the pool."""
        with self._lock:
            if not self._jobs:
                self._running = False
                return
        self._start()

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            self._jobs.append((future, fn))
            if self._running:
                return future
            self._running = True
        self._start()
        return future

    def _start(self) -> None:
        try:
            _pool().submit(self._drain)
        except BaseException:
            with self._lock:
                self._running = False
            raise

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._running = False
                    return
                future, fn = self._jobs.popleft()
            if not future.set_running_or_notify_cancel():
                continue  # its awaiter was cancelled before it started
            try:
                result = fn()
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
