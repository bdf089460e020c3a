"""One LISTEN connection per process for every follower of a queue's runs.

A web server streams many runs at once; each ``follow`` or ``stream_run`` used to open its
own LISTEN connection (one PostgreSQL backend per open page). ``Notices`` keeps a single
connection listening on the channel and hands each notification to the followers that
subscribed; it also reads runs' rows for them on a second connection, so a web server holds
two connections for its streams however many there are. A follower still polls every
``poll_interval`` seconds: a notice lost with a dropped connection only delays it. When the
connection drops, every subscription reads as closed; the next ``subscribe`` opens a new one.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

__all__ = ["Note", "Notices", "Subscription"]

log = logging.getLogger("lovia.workers")

_KEPT = 4096
"""Notices a subscription keeps unread; past that the oldest go (its poll catches up)."""


class Note:
    """A notice as psycopg's ``notifies()`` yields it (its ``payload``)."""

    __slots__ = ("payload",)

    def __init__(self, payload: str) -> None:
        self.payload = payload


class Subscription:
    """A follower's share of the process's LISTEN connection: every notice on the channel,
    in order, read with ``wait`` (for one payload) or ``notifies`` (as psycopg's)."""

    def __init__(self, hub: Notices) -> None:
        self._hub = hub
        self._unread: deque[str] = deque(maxlen=_KEPT)
        self._wake = asyncio.Event()
        self.closed = False

    def _deliver(self, payload: str) -> None:
        self._unread.append(payload)
        self._wake.set()

    def _lost(self) -> None:
        self.closed = True
        self._wake.set()

    async def _next(self, deadline: float) -> str | None:
        """The next notice, or ``None`` at ``deadline``; after the connection dropped,
        ``None`` at the deadline (the follower polls meanwhile)."""
        loop = asyncio.get_running_loop()
        while True:
            if self._unread:
                return self._unread.popleft()
            left = deadline - loop.time()
            if left <= 0:
                return None
            if self.closed:
                await asyncio.sleep(left)
                return None
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except asyncio.TimeoutError:
                return None

    async def wait(self, payload: str, timeout: float) -> None:
        """Return once ``payload`` arrives (or arrived since the last read), or ``timeout``
        seconds pass."""
        deadline = asyncio.get_running_loop().time() + max(timeout, 0.0)
        while (got := await self._next(deadline)) is not None:
            if got == payload:
                return

    async def notifies(
        self, *, timeout: float | None = None, stop_after: int | None = None
    ) -> AsyncIterator[Note]:
        """The notices arriving within ``timeout`` seconds, as psycopg's ``notifies``."""
        deadline = asyncio.get_running_loop().time() + (1e9 if timeout is None else timeout)
        count = 0
        while (got := await self._next(deadline)) is not None:
            yield Note(got)
            count += 1
            if stop_after is not None and count >= stop_after:
                return

    async def close(self) -> None:
        self.closed = True
        self._hub._subs.discard(self)


class Notices:
    """The LISTEN connection of one queue in this process, opened on first ``subscribe``."""

    def __init__(self, connect: Callable[[], Awaitable[Any]], channel: str) -> None:
        self._connect = connect
        self._channel = channel
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fresh()

    def _fresh(self) -> None:
        self._conn: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._subs: set[Subscription] = set()
        self._opening = asyncio.Lock()
        self._reads: Any = None  # the connection rows are read on
        self._reading = asyncio.Lock()

    def _on_this_loop(self) -> None:
        """Connections of an event loop that has ended (a second ``asyncio.run``) are left
        to it: this loop opens its own."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop = loop
            self._fresh()

    async def subscribe(self) -> Subscription | None:
        """A subscription, or ``None`` (poll only) when no LISTEN connection opens."""
        self._on_this_loop()
        async with self._opening:
            if self._conn is None or self._conn.closed:
                try:
                    conn = await self._connect()
                    await conn.execute(f"LISTEN {self._channel}")
                except Exception as exc:
                    log.warning("follow: no LISTEN connection, polling only: %s", exc)
                    return None
                self._conn = conn
                self._reader = asyncio.ensure_future(self._read(conn))
        sub = Subscription(self)
        self._subs.add(sub)
        return sub

    async def _read(self, conn: Any) -> None:
        try:
            async for note in conn.notifies():
                for sub in list(self._subs):
                    sub._deliver(note.payload)
        except Exception as exc:  # a dropped connection: followers poll, then re-subscribe
            log.info("follow: LISTEN connection lost: %s", exc)
        finally:
            for sub in list(self._subs):
                sub._lost()
            self._subs.clear()
            await _close(conn)

    async def read(self, query: Any, params: Any) -> Any:
        """One row of ``query`` on the shared read connection (opened when needed)."""
        self._on_this_loop()
        async with self._reading:
            if self._reads is None or self._reads.closed:
                self._reads = await self._connect()
            try:
                cur = await self._reads.execute(query, params)
                return await cur.fetchone()
            except Exception:
                await _close(self._reads)
                self._reads = None
                raise

    async def close(self) -> None:
        if self._loop is not asyncio.get_running_loop():
            return  # nothing of this loop's is open
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        for conn in (self._conn, self._reads):
            if conn is not None:
                await _close(conn)
        self._conn = self._reads = None


async def _close(conn: Any) -> None:
    try:
        await conn.close()
    except Exception as exc:  # closing a broken connection: nothing left to do
        log.debug("follow: closing a connection: %s", exc)
