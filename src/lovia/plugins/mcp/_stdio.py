"""The stdio transport: an MCP server as a child process, one JSON-RPC message per line.

lovia runs the process itself rather than through the SDK's ``stdio_client`` so that it can:

- end the server when lovia dies, however it dies: the server leads a process group of its
  own, and on Linux the kernel sends it SIGTERM when lovia's process goes away
  (``PR_SET_PDEATHSIG``, set in the child before it runs the server);
- read any bytes: text that is not UTF-8 is replaced (and logged), never a broken connection;
- read a message of any length in bounded memory: lines are split as they stream in, and a
  line longer than the cap keeps its start (``Oversize``, read further by ``salvage``) while
  the rest is read and dropped;
- report a message it cannot read (``BadMessage``) instead of dropping it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ._wire import BadMessage, Oversize, decode, excerpt, parse, salvage

log = logging.getLogger("lovia.mcp")

_CHUNK = 1 << 16
_TAIL = 1024  # the last bytes of an over-long line, where some servers put the id
_GRACE = 2.0  # seconds a server has to exit after its stdin closes, then after SIGTERM
_READ_IN_THREAD = 256 * 1024  # bytes: a longer line is decoded and parsed off the event loop
_JUNK_SHOWN = 3  # lines that are not MCP logged per connection (a noisy server stays quiet)
_PR_SET_PDEATHSIG = 1


def _parent_death_signal() -> Callable[[], None] | None:
    """A function for the child, between fork and exec, that asks Linux to send it SIGTERM
    when lovia's process ends (``None`` elsewhere). It calls nothing that allocates or locks:
    the ``prctl`` function is looked up here, in the parent."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None
    parent = os.getpid()

    def in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # lovia died before the request took hold
            os._exit(1)

    return in_child


class Lines:
    """Splits a byte stream into lines as it arrives; a line longer than ``cap`` bytes keeps
    its first ``cap`` bytes and its last ``_TAIL`` (an ``Oversize``), the rest is dropped."""

    def __init__(self, cap: int | None) -> None:
        self.cap = cap
        self._parts: list[bytes] = []
        self._kept = 0
        self._total = 0
        self._tail = b""

    def feed(self, chunk: bytes) -> list[bytes | Oversize]:
        done: list[bytes | Oversize] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            self._add(chunk[start:] if end < 0 else chunk[start:end])
            if end < 0:
                return done
            done.append(self.take())
            start = end + 1

    def _add(self, piece: bytes) -> None:
        self._total += len(piece)
        if self.cap is None or self._kept + len(piece) <= self.cap:
            self._parts.append(piece)
            self._kept += len(piece)
        elif self._kept < self.cap:
            self._parts.append(piece[: self.cap - self._kept])
            self._kept = self.cap
        if self.cap is not None and self._total > self.cap:
            self._tail = (self._tail + piece[-_TAIL:])[-_TAIL:]

    def take(self) -> bytes | Oversize:
        """The line read so far (at the end of the stream: what came after the last newline)."""
        head = b"".join(self._parts)
        total, tail = self._total, self._tail
        self._parts, self._kept, self._total, self._tail = [], 0, 0, b""
        if self.cap is not None and total > self.cap:
            return Oversize(head, tail, total)
        return head


class StdioTransport:
    """Opens one server process per connection; ``noticed`` keeps what it wrote to its
    stdout that was not MCP (for the error when its handshake never comes)."""

    def __init__(
        self,
        command: str,
        args: list[str],
        env: dict[str, str] | None,
        cwd: str | None,
        label: str,
        max_bytes: int | None,
    ) -> None:
        self.command, self.args, self.env, self.cwd = command, args, env, cwd
        self.label = label
        self.max_bytes = max_bytes
        self.noticed: list[str] = []

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[tuple[Any, Any]]:
        import anyio
        from mcp.client.stdio import get_default_environment

        proc = await asyncio.create_subprocess_exec(
            self.command,
            *self.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=get_default_environment() | (self.env or {}),
            cwd=self.cwd,
            start_new_session=True,  # its own process group: stopping it stops its children
            preexec_fn=_parent_death_signal(),
        )
        to_session, from_server = anyio.create_memory_object_stream[Any](0)
        to_server, from_session = anyio.create_memory_object_stream[Any](0)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._read, proc, to_session)
                tasks.start_soon(self._write, proc, from_session, to_session)
                try:
                    yield from_server, to_server
                finally:
                    with anyio.CancelScope(shield=True):
                        from_server.close()
                        to_server.close()
                        await _stop(proc, self.label)
                    tasks.cancel_scope.cancel()
        finally:
            if proc.returncode is None:  # cancelled before the stop: do not leave it behind
                _signal_group(proc.pid, signal.SIGKILL)
            # a leftover child of the server may hold its pipes open, which keeps asyncio's
            # transport open (and warning when collected): close it now
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()

    async def _read(self, proc: asyncio.subprocess.Process, out: Any) -> None:
        import anyio

        assert proc.stdout is not None
        lines = Lines(self.max_bytes)
        delivering = True
        async with out:
            while True:
                chunk = await proc.stdout.read(_CHUNK)
                found = lines.feed(chunk) if chunk else [lines.take()]
                for line in found:
                    if not delivering:
                        continue  # the session is gone: keep draining so the server can exit
                    item = await self._message(line)
                    if item is None:
                        continue
                    try:
                        await out.send(item)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        delivering = False
                if not chunk:
                    return

    async def _message(self, line: bytes | Oversize) -> Any:
        """What the session gets for one line: a message, a ``BadMessage`` or ``None``
        (blank lines, and lines that are not JSON at all, which are logged and skipped). A
        long line is read in a worker thread, so the event loop keeps serving other runs."""
        import anyio

        if isinstance(line, Oversize):
            return await anyio.to_thread.run_sync(salvage, line, self.label)
        if len(line) > _READ_IN_THREAD:
            return await anyio.to_thread.run_sync(self._read_line, line)
        return self._read_line(line)

    def _read_line(self, line: bytes) -> Any:
        text = decode(line.rstrip(b"\r"), self.label)
        start = text.lstrip()[:1]
        if not start:
            return None
        if start not in "{[":
            if len(self.noticed) < _JUNK_SHOWN:
                self.noticed.append(excerpt(text, 80))
                log.warning(
                    "mcp.not_mcp: %s wrote a line that is not MCP: %s",
                    self.label,
                    excerpt(text, 200),
                )
            return None
        item = parse(text, self.label)
        if isinstance(item, BadMessage):
            log.warning(
                "mcp.bad_message: %s sent a message that cannot be read: %s", self.label, item
            )
        return item

    async def _write(self, proc: asyncio.subprocess.Process, inbox: Any, to_session: Any) -> None:
        assert proc.stdin is not None
        try:
            async with inbox:
                async for message in inbox:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    proc.stdin.write(data.encode("utf-8", "surrogatepass") + b"\n")
                    await proc.stdin.drain()
        except (ConnectionError, OSError) as exc:
            # it cannot read any more: end the session rather than let a call wait forever
            log.info("mcp.closed: %s stopped reading its stdin (%s)", self.label, exc)
            await to_session.aclose()


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _exited(proc: asyncio.subprocess.Process, seconds: float) -> bool:
    """Whether the process ended within ``seconds`` (its return code, not ``wait()``, which
    also waits for pipes a leftover child may hold open)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while proc.returncode is None:
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def _stop(proc: asyncio.subprocess.Process, label: str) -> None:
    """Close its stdin, give it a moment, then SIGTERM and SIGKILL its process group."""
    assert proc.stdin is not None
    with contextlib.suppress(ConnectionError, OSError):
        proc.stdin.close()
    if await _exited(proc, _GRACE):
        return
    _signal_group(proc.pid, signal.SIGTERM)
    if await _exited(proc, _GRACE):
        return
    _signal_group(proc.pid, signal.SIGKILL)
    if not await _exited(proc, _GRACE):
        log.warning("mcp.close: %s (pid %d) survived SIGKILL; left behind", label, proc.pid)
