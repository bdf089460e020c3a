"""The seams of the workspace: a session (what tools call), a shell executor (how a judged
command runs) and a workspace configuration (what ``Agent(workspace=...)`` accepts)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from .policy import Decision, WorkspacePolicy
from .types import (
    CommandResult,
    DirEntry,
    EditResult,
    FileBytes,
    FileChange,
    FileContent,
    GrepMatch,
    ProcessOutput,
    ProcessStart,
    ProcessStatus,
)

__all__ = ["ShellExecutor", "WorkspaceLike", "WorkspaceSession"]


class WorkspaceSession(Protocol):
    """A live workspace: files and processes under one root and one policy.

    Paths may be workspace-relative, absolute or start with ``~``; each is resolved (links
    followed) and judged by ``policy`` on every call, whoever makes it: ``deny`` raises
    ``PermissionDeniedError``; ``ask`` is the calling tool's to route to an approval
    (``decide_path`` / ``decide_command`` tell it beforehand).
    """

    policy: WorkspacePolicy

    def decide_path(self, path: str, *, write: bool = False) -> Decision: ...

    def decide_command(self, command: str, cwd: str = ".") -> Decision: ...

    async def read_text(
        self, path: str, *, start: int | None = None, end: int | None = None
    ) -> FileContent: ...

    async def read_bytes(self, path: str, *, max_bytes: int | None = None) -> FileBytes: ...

    async def write_text(
        self, path: str, content: str, *, create_only: bool = False
    ) -> FileChange: ...

    async def edit_text(
        self, path: str, old: str, new: str, *, replace_all: bool = False
    ) -> EditResult: ...

    async def list_files(
        self,
        path: str = ".",
        *,
        pattern: str | None = None,
        include_hidden: bool = False,
        max_results: int | None = None,
    ) -> list[DirEntry]: ...

    async def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        ignore_case: bool = False,
        include_hidden: bool = False,
        max_matches: int | None = None,
    ) -> list[GrepMatch]: ...

    async def run(
        self,
        command: str,
        *,
        cwd: str = ".",
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult: ...

    async def spawn(
        self, command: str, *, cwd: str = ".", env: Mapping[str, str] | None = None
    ) -> ProcessStart: ...

    async def read_process_output(self, process_id: str) -> ProcessOutput: ...

    async def kill_process(self, process_id: str) -> ProcessOutput: ...

    def background_processes(self) -> list[ProcessStatus]: ...

    async def close(self) -> None: ...


class ShellExecutor(Protocol):
    """Runs a command the policy (and any approval) has already let through: the seam for an
    OS sandbox (bubblewrap, Seatbelt, a container), which can derive its scope from
    ``policy`` and ``root``. It decides how a command runs, never whether; it owns and kills
    what it starts. Output may come back whole: the session cuts it to its limits.
    Background processes do not start under an executor."""

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float | None,
        policy: WorkspacePolicy,
        root: Path,
    ) -> CommandResult: ...


class WorkspaceLike(Protocol):
    """What ``Agent(workspace=...)`` takes: a configuration that opens sessions.

    A run opens one session per agent (``open``), offers the model ``tools()``, adds
    ``instructions()`` to the system prompt and ``view_injectors()`` to every model call,
    and closes the session when the run ends if ``close_after_run``.
    """

    @property
    def close_after_run(self) -> bool: ...

    async def open(self) -> WorkspaceSession: ...

    def tools(self) -> list[Any]:
        """The ``Tool`` objects to offer the model (this module names no type above it, so
        ``Agent`` and ``RunContext`` can name these protocols without an import circle)."""
        ...

    def instructions(self) -> str: ...

    def view_injectors(self) -> list[Any]: ...
