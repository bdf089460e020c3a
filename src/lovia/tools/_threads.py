"""The worker threads sync tool functions run on, never the event loop's thread.

``in_thread(fn, kwargs)`` does what ``asyncio.to_thread`` does for a tool (the function runs
in a copy of the caller's context; cancelling the awaiting task abandons the call, and a call
cancelled before a thread took it never starts), on a small pool of its own: one queue, no
``concurrent.futures`` future chained to an asyncio one, and the result handed to the loop
as the thread's last step before it waits again. That halves the cost of the hop to a thread
and back, which a sync tool pays on every call. Threads are made as calls need them, up to
the size of asyncio's default executor, and kept; at interpreter exit they finish the call
they are running and stop, as an executor's threads do.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

__all__ = ["in_thread"]

MAX_THREADS = min(32, (os.cpu_count() or 1) + 4)  # as asyncio's default executor

_Item = tuple[Callable[..., Any], dict[str, Any], contextvars.Context, Any, "asyncio.Future[Any]"]


class _Pool:
    __slots__ = ("idle", "lock", "queue", "threads")

    def __init__(self) -> None:
        self.queue: SimpleQueue[_Item | None] = SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0  # threads waiting for a call that no submitted call has claimed yet
        self.threads = 0

    def submit(self, item: _Item) -> None:
        with self.lock:
            if self.idle:
                self.idle -= 1
                spawn = False
            else:
                spawn = self.threads < MAX_THREADS  # else it waits for a busy thread
                self.threads += spawn
        if spawn:
            thread = threading.Thread(
                target=self._work, name=f"lovia-tool-{self.threads}", daemon=_register is None
            )
            thread.start()
        self.queue.put(item)

    def _work(self) -> None:
        get, lock = self.queue.get, self.lock
        while True:
            item = get()
            if item is None:  # interpreter exit
                return
            fn, kwargs, context, loop, future = item
            del item
            ran, ok, value = not future.cancelled(), False, None  # abandoned: it never runs
            if ran:
                try:
                    ok, value = True, context.run(fn, **kwargs)
                except BaseException as exc:  # handed to the awaiting task, as an executor does
                    value = exc
            with lock:
                self.idle += 1
            if ran:
                try:
                    loop.call_soon_threadsafe(_deliver, future, ok, value)
                except RuntimeError:  # the loop is closed: no one waits for it
                    pass
            del fn, kwargs, context, loop, future, value

    def stop(self) -> None:
        """Each thread stops after the call it is running (at interpreter exit)."""
        for _ in range(self.threads):
            self.queue.put(None)


def _deliver(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():  # the awaiting task was cancelled meanwhile
        return
    if ok:
        future.set_result(value)
        return
    try:
        future.set_exception(value)
    except TypeError:  # StopIteration cannot travel through a future
        future.set_exception(RuntimeError(f"the tool raised {value!r}"))


_pool = _Pool()
_register = getattr(threading, "_register_atexit", None)  # runs before threads are joined


def _after_fork() -> None:
    global _pool
    _pool = _Pool()  # the parent's threads do not exist in a child


def _at_exit() -> None:
    _pool.stop()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
if _register is not None:
    _register(_at_exit)


def in_thread(fn: Callable[..., Any], kwargs: dict[str, Any]) -> asyncio.Future[Any]:
    """``fn(**kwargs)`` on a worker thread, in a copy of the current context; await it."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    _pool.submit((fn, kwargs, contextvars.copy_context(), loop, future))
    return future
