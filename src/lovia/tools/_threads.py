"""The worker threads sync tool functions run on, never the event loop's thread.

``in_thread(fn, kwargs)`` does what ``asyncio.to_thread`` does for a tool (the function runs
in a copy of the caller's context; cancelling the awaiting task abandons the call, and a call
cancelled before a thread took it never starts), on a pool of its own: one queue, no
``concurrent.futures`` future chained to an asyncio one, and the result handed to the loop
as the thread's last step before it waits again. That halves the cost of the hop to a thread
and back, which a sync tool pays on every call.

Idle threads wait on a socket, one byte per queued call: sending that byte lets go of the
GIL while the kernel wakes a thread, so the woken thread can run at once. (A lock or
``queue.SimpleQueue`` wakes it with the GIL held: the thread wakes only to wait for the GIL,
and has to be woken a second time when the loop lets go of it.)

What ``in_thread`` returns is a ``ThreadCall``: awaited, cancelled and completed as an
``asyncio.Future`` is, but the task awaiting it is woken at once, in the loop callback that
brings the result, where a future's done callbacks wait for the loop's next turn (a select
and one more callback per call).

When the run that made the call is cancelled (its ``CancelToken``) while the function runs on
its thread, cancelling the awaiting task does not abandon the call at once: it waits up to
``CANCEL_GRACE`` seconds for the thread, and a value the function returns within them reaches
the awaiting task as if the cancel had come just after (the run keeps it, then stops). A call
that outlives the grace is abandoned then; one still queued, and any call cancelled while its
run's token has not fired (a timeout, the task cancelled from outside), are abandoned at once,
as above. A cancelled run starts no new call.

As with each loop's default executor, one event loop runs at most ``MAX_THREADS`` calls at a
time (the rest wait their turn) and other loops are not held up by it: a sync tool that runs
a whole run of its own (``Runner.run_sync``) gets threads for that run's tools. Threads are
made when no idle one is left, and leave after ``IDLE_SECONDS`` without work; at interpreter
exit they finish the call they are running and stop, as an executor's threads do.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import socket
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ..reliability import CancelToken

__all__ = ["CANCEL_GRACE", "ThreadCall", "in_thread", "within"]

T = TypeVar("T")

CANCEL_GRACE = 3.0  # seconds a cancelled run waits for a sync tool's thread to return
MAX_THREADS = min(32, (os.cpu_count() or 1) + 4)  # per loop, as asyncio's default executor
IDLE_SECONDS = 60.0

_Item = tuple[Callable[..., Any], dict[str, Any], contextvars.Context, Any, "ThreadCall"]


class _Pool:
    __slots__ = ("busy", "calls", "idle", "lock", "stopping", "threads", "waiting", "wake")

    def __init__(self) -> None:
        self.calls: deque[_Item | None] = deque()  # taken by a thread per byte it reads
        self.wake: tuple[socket.socket, socket.socket] | None = None  # made on first use
        self.lock = threading.Lock()
        self.idle = 0  # threads waiting for work that no submitted call has claimed yet
        self.threads = 0
        self.busy: dict[Any, int] = {}  # loop -> its calls on threads now
        self.waiting: dict[Any, deque[_Item]] = {}  # loop -> its calls beyond MAX_THREADS
        self.stopping = False

    def _sockets(self) -> tuple[socket.socket, socket.socket]:
        """The (reader, writer) pair, made under ``lock``."""
        if self.wake is None:
            reader, writer = socket.socketpair()
            reader.settimeout(IDLE_SECONDS)  # a thread idle this long leaves
            self.wake = (reader, writer)
        return self.wake

    def submit(self, item: _Item) -> None:
        loop = item[3]
        with self.lock:
            running = self.busy.get(loop, 0)
            if running >= MAX_THREADS:  # this loop's calls wait for one of its own to end
                self.waiting.setdefault(loop, deque()).append(item)
                return
            self.busy[loop] = running + 1
            spawn = not self.idle
            if spawn:
                self.threads += 1
            else:
                self.idle -= 1
            writer = (self.wake or self._sockets())[1]
        if spawn:
            threading.Thread(
                target=self._work, name=f"lovia-tool-{self.threads}", daemon=_register is None
            ).start()
        self.calls.append(item)
        writer.send(b"\0")  # at most one byte per thread waits here: it never fills up

    def _work(self) -> None:
        lock = self.lock
        item: _Item | None = None
        while True:
            if item is None:
                item = self._next()
                if item is None:
                    return
            fn, kwargs, context, loop, future = item
            future._taken = True  # before the check: a cancel that sees it waits for the call
            ran, ok, value = not future.cancelled(), False, None  # abandoned: it never runs
            if ran:
                try:
                    ok, value = True, context.run(fn, **kwargs)
                except BaseException as exc:  # handed to the awaiting task, as an executor does
                    value = exc
            with lock:  # the loop's next waiting call, if any, runs on this thread now
                backlog = self.waiting.get(loop)
                item = backlog.popleft() if backlog else None
                if backlog is not None and not backlog:
                    del self.waiting[loop]
                if item is None:
                    running = self.busy[loop] - 1
                    if running:
                        self.busy[loop] = running
                    else:
                        del self.busy[loop]
                    self.idle += 1
            if ran:
                try:
                    loop.call_soon_threadsafe(future.deliver, ok, value)
                except RuntimeError:  # the loop is closed: no one waits for it
                    pass
            del fn, kwargs, context, loop, future, value

    def _next(self) -> _Item | None:
        """The next call for this thread; ``None``: the thread leaves (idle, or exit)."""
        with self.lock:
            reader = self._sockets()[0]
        while True:
            try:
                reader.recv(1)
            except TimeoutError:
                with self.lock:
                    if not self.idle:  # a call claimed this thread and is being queued
                        continue
                    self.idle -= 1
                    self.threads -= 1
                return None
            except OSError:  # the pool was closed (a fork's child drops the parent's)
                return None
            return self.calls.popleft()  # None: interpreter exit

    def close(self) -> None:
        """Close the sockets (threads still waiting on them leave)."""
        wake, self.wake = self.wake, None
        if wake is not None:
            for sock in wake:
                sock.close()

    def stop(self) -> None:
        """Each thread stops after the call it is running (at interpreter exit)."""
        with self.lock:
            count = self.threads
            writer = self.wake[1] if self.wake is not None else None
        for _ in range(count):
            self.calls.append(None)
            if writer is not None:
                writer.send(b"\0")


_PENDING, _DONE, _CANCELLED = 0, 1, 2


class ThreadCall:
    """One call on a worker thread, awaited as an ``asyncio.Future`` (it speaks the future
    protocol tasks use: ``_asyncio_future_blocking``, ``get_loop``, ``add_done_callback``,
    ``cancel``, ``result``). ``deliver`` runs the done callbacks (the awaiting task's wake-up)
    at once instead of scheduling them for the loop's next turn.

    ``stop`` is the cancel token of the run that made the call: once it has fired, a cancel
    that finds the call running on its thread is held for ``CANCEL_GRACE`` seconds (see the
    module's docstring)."""

    __slots__ = (
        "_asyncio_future_blocking",
        "_callbacks",
        "_held",
        "_loop",
        "_state",
        "_stop",
        "_taken",
        "_value",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop, stop: CancelToken | None = None) -> None:
        self._loop = loop
        self._asyncio_future_blocking = False
        self._state = _PENDING
        self._value: Any = None  # the result, the exception, or the cancel message
        self._callbacks: list[tuple[Callable[[Any], Any], contextvars.Context | None]] = []
        self._stop = stop
        self._taken = False  # a worker thread took the call (set on that thread)
        self._held: asyncio.TimerHandle | None = None  # a run's cancel waits for the thread

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def done(self) -> bool:
        return self._state != _PENDING

    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def result(self) -> Any:
        state, value = self._state, self._value
        if state == _CANCELLED:
            raise asyncio.CancelledError() if value is None else asyncio.CancelledError(value)
        if state == _PENDING:
            raise asyncio.InvalidStateError("Result is not ready.")
        if isinstance(value, _Raised):
            raise value.error
        return value

    def exception(self) -> BaseException | None:
        if self._state != _DONE:
            self.result()  # raises: cancelled or not ready
        return self._value.error if isinstance(self._value, _Raised) else None

    def add_done_callback(
        self, fn: Callable[[Any], Any], *, context: contextvars.Context | None = None
    ) -> None:
        if self._state != _PENDING:
            self._loop.call_soon(fn, self, context=context)
        else:
            self._callbacks.append((fn, context))

    def remove_done_callback(self, fn: Callable[[Any], Any]) -> int:
        kept = [(f, c) for f, c in self._callbacks if f != fn]
        removed = len(self._callbacks) - len(kept)
        self._callbacks = kept
        return removed

    def cancel(self, msg: Any = None) -> bool:
        if self._state != _PENDING or self._held is not None:
            return False  # held: the awaiting task takes its cancel when the call ends
        stop = self._stop
        if stop is not None and stop.cancelled and self._taken:
            # the run was cancelled while the function runs: wait for it, for a while. The
            # task that asked keeps its cancel pending (asyncio's protocol for a future that
            # refuses), so it is cancelled the moment this call ends, either way.
            self._held = self._loop.call_later(CANCEL_GRACE, self._abandon, msg)
            return False
        self._abandon(msg)
        return True

    def _abandon(self, msg: Any) -> None:
        """Give up on the call: the awaiting task is woken cancelled; the thread, if it runs
        the function, finishes on its own and its outcome is dropped."""
        if self._state != _PENDING:
            return
        self._state, self._value = _CANCELLED, msg
        callbacks, self._callbacks = self._callbacks, []
        for fn, context in callbacks:  # scheduled, as a future's are
            self._loop.call_soon(fn, self, context=context)

    def deliver(self, ok: bool, value: Any) -> None:
        """On the loop: the worker's outcome; the callbacks run now. Ignored once the call
        was cancelled (the awaiting task gave up on it)."""
        if self._state != _PENDING:
            return
        if self._held is not None:
            self._held.cancel()  # in time: the timer that would abandon it is not needed
        if not ok:  # StopIteration cannot be raised into a coroutine as it is
            if isinstance(value, StopIteration):
                value = RuntimeError(f"the tool raised {value!r}")
            value = _Raised(value)
        self._state, self._value = _DONE, value
        callbacks, self._callbacks = self._callbacks, []
        for fn, context in callbacks:
            try:
                if context is None:
                    fn(self)
                else:
                    context.run(fn, self)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:  # as the loop reports a failed callback
                self._loop.call_exception_handler(
                    {"message": f"Exception in callback {fn!r}", "exception": exc, "future": self}
                )

    def __await__(self) -> Generator[Any, None, Any]:
        if self._state == _PENDING:
            self._asyncio_future_blocking = True
            try:
                yield self  # the task waits until a done callback wakes it
            except asyncio.CancelledError:
                # A held cancel whose call returned in time: the value stands, and the run,
                # whose token has fired, stops once it has kept it. An error raised in time
                # is dropped with the cancel (a retry, a policy's fallback must not start).
                if self._held is None or self._state != _DONE or isinstance(self._value, _Raised):
                    raise
        if self._state == _PENDING:
            raise RuntimeError("await wasn't used with future")
        return self.result()

    __iter__ = __await__


class _Raised:
    """What the tool raised (kept apart from a result that is an exception object)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_pool = _Pool()
_register = getattr(threading, "_register_atexit", None)  # runs before threads are joined


def _after_fork() -> None:
    global _pool
    _pool.close()  # the child's copies of the parent's sockets
    _pool = _Pool()  # the parent's threads do not exist in a child


def _at_exit() -> None:
    _pool.stop()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
if _register is not None:
    _register(_at_exit)
atexit.register(lambda: _pool.close())  # after the threads were joined


def in_thread(
    fn: Callable[..., Any], kwargs: dict[str, Any], stop: CancelToken | None = None
) -> ThreadCall:
    """``fn(**kwargs)`` on a worker thread, in a copy of the current context; await it.
    ``stop``: the cancel token of the run the call is for (``RunCancelled`` if it fired)."""
    if stop is not None and stop.cancelled:
        stop.check()
    loop = asyncio.get_running_loop()
    call = ThreadCall(loop, stop)
    _pool.submit((fn, kwargs, contextvars.copy_context(), loop, call))
    return call


_timeout = getattr(asyncio, "timeout", None)  # Python 3.11+


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """``asyncio.wait_for(awaitable, seconds)``, run in the awaiting task where Python has
    ``asyncio.timeout``: a sync call held by a cancelled run then hands its value to that
    task (``wait_for`` on Python 3.11 awaits in a task of its own and drops it)."""
    if _timeout is None:
        return await asyncio.wait_for(awaitable, seconds)
    async with _timeout(seconds):
        return await awaitable
