"""Running shell commands for a workspace: their environment, their output and their end.

Every command starts in a process group of its own, with no stdin, so a timeout, a cancel or
the session's close kills the command together with everything it started (``killpg``; on
Windows ``taskkill /T``). Output is read as it comes and kept within a fixed number of bytes
per stream (head and tail), however much a command writes. A command whose shell has exited
but whose leftovers (``server &``) still hold its output is given ``REAP_GRACE`` seconds, then
killed; a descendant that left the group (``setsid``) cannot be killed from here, but it can
no longer hold the call open either.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..tools.base import clip_text
from .types import CommandResult

__all__ = [
    "REAP_GRACE",
    "TailBuffer",
    "activate_venv",
    "base_env",
    "clip_result",
    "close_transport",
    "kill_process_group",
    "run_command",
    "start_process",
    "venv_bin_dir",
    "wait_exit",
]

REAP_GRACE = 2.0
"""Seconds a command's output may stay open after its shell exited (or was killed)."""
_READ = 65536
_POLL = 0.05

_POSIX_ENV = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG", "TZ", "TERM"})
_WINDOWS_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "SYSTEMROOT",
        "WINDIR",
        "SYSTEMDRIVE",
        "COMSPEC",
        "PATHEXT",
        "TEMP",
        "TMP",
        "USERPROFILE",
        "USERNAME",
        "HOMEDRIVE",
        "HOMEPATH",
        "APPDATA",
        "LOCALAPPDATA",
        "PROGRAMDATA",
        "PROGRAMFILES",
        "PROGRAMFILES(X86)",
    }
)


def base_env(environ: Mapping[str, str], os_name: str) -> dict[str, str]:
    """The host variables a command gets by default: what finding programs, the user's home,
    temporary files, the locale and the terminal type need, and nothing else (no keys, tokens
    or proxies)."""
    if os_name == "nt":  # names are case-insensitive there; the child gets them upper-case
        upper = {k.upper(): v for k, v in environ.items()}
        return {k: v for k, v in upper.items() if k in _WINDOWS_ENV or _locale(k)}
    return {k: v for k, v in environ.items() if k in _POSIX_ENV or _locale(k)}


def _locale(name: str) -> bool:
    return name.startswith("LC_") or name == "LANGUAGE"


def venv_bin_dir(root: Path, os_name: str | None = None) -> tuple[Path, Path] | None:
    """``(venv, its bin directory)`` for a virtualenv at the root with an interpreter in it
    (``.venv`` before ``venv``), or ``None``."""
    nt = (os_name or os.name) == "nt"
    scripts, python = ("Scripts", "python.exe") if nt else ("bin", "python")
    for name in (".venv", "venv"):
        venv = root / name
        if (venv / scripts / python).exists():
            return venv, venv / scripts
    return None


def activate_venv(env: dict[str, str], root: Path) -> None:
    """Put the root's virtualenv first on ``PATH`` (as ``activate`` does), if there is one."""
    found = venv_bin_dir(root)
    if found is None:
        return
    venv, bin_dir = found
    env["PATH"] = str(bin_dir) + (os.pathsep + env["PATH"] if env.get("PATH") else "")
    env["VIRTUAL_ENV"] = str(venv)
    env.pop("PYTHONHOME", None)


def kill_process_group(proc: Any) -> None:
    """SIGKILL the process group ``proc`` leads (Windows: its whole process tree)."""
    if os.name == "nt":
        subprocess.run(
            ["taskkill", "/F", "/T", "/PID", str(proc.pid)], capture_output=True, check=False
        )
        with contextlib.suppress(ProcessLookupError, OSError):
            proc.kill()
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def close_transport(proc: asyncio.subprocess.Process) -> None:
    """Let go of a process's pipes (a descendant that escaped the kill may still hold them)."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def start_process(
    command: str, *, cwd: Path, env: Mapping[str, str], merge_output: bool
) -> asyncio.subprocess.Process:
    """The command in a new process group, stdin closed, output on pipes."""
    group: dict[str, Any] = (
        {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
        if os.name == "nt"
        else {"start_new_session": True}
    )
    creating = asyncio.ensure_future(
        asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if merge_output else asyncio.subprocess.PIPE,
            cwd=str(cwd),
            env=dict(env),
            **group,
        )
    )
    try:
        return await asyncio.shield(creating)
    except asyncio.CancelledError:
        # Cancelled while the process was starting: it runs already. asyncio's own clean-up
        # would kill only the shell, then wait (for ever) for the pipes its children hold;
        # instead the start finishes and the whole group is ended.
        with contextlib.suppress(Exception):
            proc = await creating
            kill_process_group(proc)
            await wait_exit(proc, REAP_GRACE)
            close_transport(proc)
        raise


async def wait_exit(proc: asyncio.subprocess.Process, timeout: float | None) -> bool:
    """Whether the process exited within ``timeout`` seconds (``None``: however long). Only
    the exit counts, not the end of its output, which leftovers may hold open."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None:
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            await asyncio.wait({waiter}, timeout=_POLL if left is None else min(_POLL, left))
        return True
    finally:
        if not waiter.done():
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter


def clip_result(result: CommandResult, limit: int) -> CommandResult:
    """A result from elsewhere (a ``ShellExecutor``) cut to ``limit`` characters a stream."""
    out, cut_out = clip_text(result.stdout, limit, keep_tail=True)
    err, cut_err = clip_text(result.stderr, limit, keep_tail=True)
    cut = result.truncated or cut_out or cut_err
    return result.model_copy(update={"stdout": out, "stderr": err, "truncated": cut})


class _Capture:
    """A stream's output within ``cap`` bytes of head and ``cap`` of tail."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            extra = len(self.tail) - self.cap
            if extra > 0:
                del self.tail[:extra]
                self.dropped += extra

    def text(self, limit: int) -> tuple[str, bool]:
        text = self.head.decode("utf-8", errors="replace")
        kept = len(text)
        if self.tail:
            tail = self.tail.decode("utf-8", errors="replace")
            kept += len(tail)
            if self.dropped:
                text += f"\n[... {self.dropped:,} bytes of output dropped ...]\n"
            text += tail
        clipped, cut = clip_text(
            text,
            limit,
            keep_tail=True,
            hint="filter the command's output (grep, head, tail)",
            total=kept + self.dropped,  # the whole output's size, not what was kept of it
        )
        return clipped, cut or self.dropped > 0


async def _pump(stream: asyncio.StreamReader | None, sink: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(_READ):
        sink.feed(chunk)


async def run_command(
    proc: asyncio.subprocess.Process, *, timeout: float | None, limit: int
) -> CommandResult:
    """Read a started command to its end (or its timeout) and say how it went. On cancel the
    command's group is killed before the cancel goes on."""
    out, err = _Capture(limit * 4), _Capture(limit * 4)
    readers = [
        asyncio.ensure_future(_pump(proc.stdout, out)),
        asyncio.ensure_future(_pump(proc.stderr, err)),
    ]
    notes: list[str] = []
    try:
        timed_out = not await wait_exit(proc, timeout)
        if timed_out:
            kill_process_group(proc)
            await wait_exit(proc, REAP_GRACE)
        if not await _finish(readers, REAP_GRACE):
            kill_process_group(proc)  # leftovers of the command still hold its output
            if not timed_out:
                notes.append(
                    "the command exited but something it started kept its output open, so it "
                    "was killed; run long-lived processes with background=true"
                )
            await _finish(readers, 0.2)
    except BaseException:
        kill_process_group(proc)
        for r in readers:
            r.cancel()
        close_transport(proc)
        raise
    for r in readers:
        r.cancel()
    close_transport(proc)
    stdout, cut_out = out.text(limit)
    stderr, cut_err = err.text(limit)
    if notes:
        stderr = "\n".join([stderr.rstrip("\n"), *notes]).lstrip("\n")
    return CommandResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        truncated=cut_out or cut_err,
    )


async def _finish(readers: Sequence[asyncio.Future[None]], grace: float) -> bool:
    """Whether the readers reached the end of their streams within ``grace`` seconds."""
    pending = [r for r in readers if not r.done()]
    if pending:
        _, still = await asyncio.wait(pending, timeout=grace)
        return not still
    return True


class TailBuffer:
    """The newest ``cap`` characters written since the last ``take``, and whether older ones
    were dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = max(1, cap)
        self._text = ""
        self._dropped = False

    def append(self, text: str) -> None:
        self._text += text
        if len(self._text) > self.cap:
            self._text = self._text[-self.cap :]
            self._dropped = True

    def take(self) -> tuple[str, bool]:
        text, dropped = self._text, self._dropped
        self._text, self._dropped = "", False
        return text, dropped


async def spool(stream: asyncio.StreamReader | None, buffer: TailBuffer) -> None:
    """Decode a background process's output into its buffer until the stream ends."""
    if stream is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await stream.read(_READ):
        buffer.append(decoder.decode(chunk))
    buffer.append(decoder.decode(b"", final=True))
