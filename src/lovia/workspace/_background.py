"""Background processes of a workspace session: started, read, killed, and gone at close.

A background process's stdout and stderr go together into a buffer that keeps the newest
``max_shell_output_chars`` between two reads. Nothing about them is saved: a resumed run
starts with none, and the session's close kills every one of them with its process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from ._proc import REAP_GRACE, TailBuffer, close_transport, kill_process_group, spool, wait_exit
from .errors import WorkspaceError
from .types import ProcessOutput, ProcessState, ProcessStatus

__all__ = ["BackgroundProcess", "Processes"]


class BackgroundProcess:
    """One process started with ``spawn``; ``exit_seen`` once a read or kill reported its end."""

    def __init__(self, proc: asyncio.subprocess.Process, command: str, cap: int) -> None:
        self.id = f"bg-{secrets.token_hex(3)}"
        self.proc = proc
        self.command = command
        self.buffer = TailBuffer(cap)
        self.reader = asyncio.ensure_future(spool(proc.stdout, self.buffer))
        self.killed = False
        self.exit_seen = False

    @property
    def status(self) -> ProcessState:
        if self.proc.returncode is None:
            return "running"
        return "killed" if self.killed else "exited"

    def snapshot(self) -> ProcessStatus:
        return ProcessStatus(
            process_id=self.id,
            command=self.command,
            status=self.status,
            exit_code=self.proc.returncode,
            exit_seen=self.exit_seen,
        )

    async def drain(self) -> None:
        """After the exit: let the reader take what is left in the pipe (bounded: a
        descendant that escaped the kill may hold it open)."""
        if not self.reader.done():
            await asyncio.wait({self.reader}, timeout=REAP_GRACE)
        if not self.reader.done():
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader
        close_transport(self.proc)

    def take(self) -> ProcessOutput:
        text, dropped = self.buffer.take()
        state = self.status
        if state != "running":
            self.exit_seen = True
        return ProcessOutput(
            process_id=self.id,
            status=state,
            exit_code=self.proc.returncode,
            output=text,
            truncated=dropped,
        )


class Processes:
    """A session's background processes by id; exited ones stay, as records, until close."""

    def __init__(self) -> None:
        self._by_id: dict[str, BackgroundProcess] = {}

    def add(self, bp: BackgroundProcess) -> None:
        while bp.id in self._by_id:  # 16 million ids: a clash is rare but possible
            bp.id = f"bg-{secrets.token_hex(3)}"
        self._by_id[bp.id] = bp

    def get(self, process_id: str) -> BackgroundProcess:
        found = self._by_id.get(process_id)
        if found is not None:
            return found
        if not self._by_id:
            raise WorkspaceError(
                f"unknown process id {process_id!r}: this session has no background processes",
                hint="background processes do not survive a restart or a resumed run; "
                "restart the command with shell(background=true)",
            )
        # every process with its state and command, as 0.9.119 listed them: an exited one's
        # output can still be read
        known = ", ".join(f"{p.id} ({p.status}: {_short(p.command)})" for p in self._by_id.values())
        raise WorkspaceError(
            f"unknown process id {process_id!r}; this session's processes: {known}",
            hint="use an id returned by shell(background=true), or restart the command",
        )

    async def read(self, process_id: str) -> ProcessOutput:
        bp = self.get(process_id)
        if bp.proc.returncode is not None:
            await bp.drain()
        return bp.take()

    async def kill(self, process_id: str) -> ProcessOutput:
        bp = self.get(process_id)
        if bp.proc.returncode is None:
            bp.killed = True
            kill_process_group(bp.proc)
            await wait_exit(bp.proc, REAP_GRACE)
        await bp.drain()
        return bp.take()

    def statuses(self) -> list[ProcessStatus]:
        return [bp.snapshot() for bp in self._by_id.values()]

    async def close(self) -> None:
        """Kill every process's group (a finished shell may have left children running) and
        let go of their pipes."""
        every, self._by_id = list(self._by_id.values()), {}
        for bp in every:
            if bp.proc.returncode is None:
                bp.killed = True
            kill_process_group(bp.proc)
        await asyncio.gather(*(wait_exit(bp.proc, REAP_GRACE) for bp in every))
        for bp in every:
            bp.reader.cancel()
        await asyncio.gather(*(bp.reader for bp in every), return_exceptions=True)
        for bp in every:
            close_transport(bp.proc)


def _short(command: str, limit: int = 60) -> str:
    one_line = " ".join(command.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 3] + "..."
