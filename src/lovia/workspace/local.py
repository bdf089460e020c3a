"""``LocalWorkspaceSession``: a workspace on this machine's disk, and its one gate.

Every file operation and command passes through the session, whoever calls it (the built-in
tools, a custom tool, a program), and is judged by the policy first: ``deny`` raises
``PermissionDeniedError``; ``ask`` is for the tool layer to route to an approval before it
calls, so the session lets it through. The session owns the processes it starts and kills
them all, with their process groups, when it closes.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ..errors import UserError
from . import _files
from ._background import BackgroundProcess, Processes
from ._proc import REAP_GRACE as _REAP_GRACE
from ._proc import (
    activate_venv,
    base_env,
    clip_result,
    close_transport,
    kill_process_group,
    run_command,
    start_process,
    wait_exit,
)
from ._proc import venv_bin_dir as _venv_bin_dir  # noqa: F401  (0.9.119's tests call it here)
from ._search import Finder
from ._shellwords import command_lines
from .command_guard import extract_path_claims
from .errors import PermissionDeniedError, WorkspaceClosedError, WorkspaceError
from .paths import ResolvedPath, resolve_path
from .policy import Decision, FileOp, WorkspacePolicy, merge_decisions
from .protocol import ShellExecutor
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
    WorkspaceLimits,
)

__all__ = ["LocalWorkspaceSession"]

_T = TypeVar("_T")
_DENIED = "denied by workspace policy"


class LocalWorkspaceSession:
    """A live workspace rooted at a local directory (which must exist).

    ``env`` adds variables to every command's environment, on top of a minimal set taken
    from the host (``PATH``, ``HOME``, the locale: no keys or tokens) or, with
    ``inherit_env=True``, the whole host environment. ``shell_timeout`` bounds a foreground
    command (seconds, ``None`` for none); ``executor`` runs commands instead of the local
    shell (a sandbox). Use it as an async context manager, or ``close()`` it.
    """

    def __init__(
        self,
        root: str | Path,
        policy: WorkspacePolicy | None = None,
        env: Mapping[str, str] | None = None,
        shell_timeout: float | None = 300.0,
        limits: WorkspaceLimits | None = None,
        inherit_env: bool = False,
        executor: ShellExecutor | None = None,
        id: str | None = None,
    ) -> None:
        resolved = Path(root).expanduser().resolve()
        if not resolved.is_dir():
            raise UserError(
                f"Workspace root does not exist: {resolved}",
                hint="point Workspace.local(root=...) at an existing directory",
            )
        self.root = root
        self.policy = policy if policy is not None else WorkspacePolicy()
        self.env = dict(env) if env is not None else None
        self.shell_timeout = shell_timeout
        self.limits = limits if limits is not None else WorkspaceLimits()
        self.inherit_env = inherit_env
        self.executor = executor
        self.id = id or f"local-{uuid.uuid4().hex[:8]}"
        self._root = resolved
        self._closed = False
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._procs: set[asyncio.subprocess.Process] = set()
        self._bg = Processes()
        self._finder = Finder(resolved, self._judge_read, self.limits)

    def __repr__(self) -> str:
        return f"LocalWorkspaceSession(root={str(self._root)!r}, id={self.id!r})"

    async def __aenter__(self) -> LocalWorkspaceSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # -- decisions ---------------------------------------------------------------------------

    def _resolve(self, path: str, base: Path | None = None) -> ResolvedPath:
        if not isinstance(path, str):
            raise WorkspaceError(f"a path must be a string, got {type(path).__name__}")
        return resolve_path(self._root, path, base=base)

    def _decide(self, rp: ResolvedPath, op: FileOp) -> Decision:
        return self.policy.decide_path(rel=rp.rel, abs_posix=rp.abs_posix, op=op)

    def _judge_read(self, target: Path) -> Decision:
        return self._decide(self._resolved(target), "read")

    def _resolved(self, target: Path) -> ResolvedPath:
        try:
            rel: str | None = target.relative_to(self._root).as_posix()
        except ValueError:
            rel = None
        return ResolvedPath(raw=str(target), abs=target, rel=rel)

    def decide_path(self, path: str, *, write: bool = False) -> Decision:
        """The policy's decision for ``path`` (resolved), for a read or a write."""
        return self._decide(self._resolve(path), "write" if write else "read")

    def decide_command(self, command: str, cwd: str = ".") -> Decision:
        """The decision for a command line: its command rules, and the path rules over the
        paths it names (redirection targets as writes) and its working directory."""
        if not self.policy.allow_shell:
            return "deny"
        verdict = self.policy.decide_command(command)
        if verdict == "deny":
            return verdict
        where = self._resolve(cwd)
        verdicts: list[Decision] = [verdict, self._decide(where, "read")]
        base = where.abs
        for line in command_lines(command):
            for op, claimed in extract_path_claims(line):
                try:
                    verdicts.append(self._decide(self._resolve(claimed, base), op))
                except (WorkspaceError, OSError, RuntimeError):
                    verdicts.append("ask")  # a path that will not resolve: a person looks
        return merge_decisions(*verdicts)

    def _check_open(self) -> None:
        if self._closed:
            raise WorkspaceClosedError(
                f"workspace session {self.id} is closed",
                hint="open a new session with Workspace.local(...).open()",
            )

    def _gate(self, path: str, *ops: FileOp) -> ResolvedPath:
        self._check_open()
        rp = self._resolve(path)
        for op in ops:
            if self._decide(rp, op) == "deny":
                raise PermissionDeniedError(self._denial(rp, op), hint=self._denial_hint(rp))
        return rp

    def _denial(self, rp: ResolvedPath, op: FileOp) -> str:
        verb = "reading" if op == "read" else "writing"
        by_rule = self.policy.rule_decision(rel=rp.rel, abs_posix=rp.abs_posix, op=op)
        if by_rule is None and not rp.inside:
            return f"{rp.display()}: {verb} outside the workspace is {_DENIED}"
        if by_rule is None and op == "write":
            return f"{rp.display()}: the workspace policy denies writing here (read-only)"
        return f"{rp.display()}: {verb} this path is {_DENIED}"

    def _denial_hint(self, rp: ResolvedPath) -> str:
        if rp.inside:
            return "work on other paths, or ask the user to change the workspace policy"
        return "work inside the workspace, or ask the user to widen its configuration"

    async def _lock_for(self, rp: ResolvedPath) -> asyncio.Lock:
        key = rp.abs_posix
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock

    async def _in_thread(self, fn: Callable[..., _T], *args: Any) -> _T:
        try:
            return await asyncio.to_thread(fn, *args)
        except PermissionError as exc:
            raise WorkspaceError(f"permission denied by the operating system: {exc}") from exc

    # -- files -------------------------------------------------------------------------------

    async def read_text(
        self, path: str, *, start: int | None = None, end: int | None = None
    ) -> FileContent:
        """UTF-8 text of ``path``, lines ``start``..``end`` (1-based, inclusive), cut to
        ``limits.max_file_read_chars``. Binary and non-UTF-8 files are refused."""
        rp = self._gate(path, "read")
        return await self._in_thread(_files.read_text, rp, start, end, self.limits)

    async def read_bytes(self, path: str, *, max_bytes: int | None = None) -> FileBytes:
        """The bytes of ``path``; ``FileTooLargeError`` (before reading) when it is bigger
        than ``max_bytes``."""
        rp = self._gate(path, "read")
        return await self._in_thread(_files.read_bytes, rp, max_bytes)

    async def write_text(self, path: str, content: str, *, create_only: bool = False) -> FileChange:
        """Write ``content`` to ``path`` (atomically, parents created, an existing file's
        permissions kept); ``create_only`` leaves an existing file alone."""
        rp = self._gate(path, "write")
        async with await self._lock_for(rp):
            self._check_open()
            result: FileChange = await self._in_thread(
                _files.write_text, rp, self._root, content, create_only
            )
        return result

    async def edit_text(
        self, path: str, old: str, new: str, *, replace_all: bool = False
    ) -> EditResult:
        """Replace the exact text ``old`` with ``new`` in ``path``: it must occur once (or
        ``replace_all``). A CRLF file takes an LF-quoted ``old``; the file is replaced
        atomically, and edits from several processes take turns."""
        rp = self._gate(path, "read", "write")
        async with await self._lock_for(rp):
            self._check_open()
            result: EditResult = await self._in_thread(_files.edit_text, rp, old, new, replace_all)
        return result

    async def list_files(
        self,
        path: str = ".",
        *,
        pattern: str | None = None,
        include_hidden: bool = False,
        max_results: int | None = None,
    ) -> list[DirEntry]:
        """The entries of directory ``path`` (directories first), or with a glob
        ``pattern`` (``**`` for any depth) the matching paths below it; denied paths are
        left out. At most ``max_results`` (default ``limits.max_list_results``); the list's
        ``truncated`` says more were left out."""
        rp = self._gate(path, "read")
        if not rp.abs.is_dir():
            named_root = path.strip("/") == self._root.name and not rp.abs.exists()
            raise WorkspaceError(
                f"Not a directory: {rp.display()}",
                hint=f"{path!r} is the workspace's name, not a directory in it: try list_files('.')"
                if named_root
                else "check the path against a listing of its parent directory",
            )
        cap = max_results or self.limits.max_list_results
        if pattern is None:
            found = self._finder.children
            return await self._in_thread(lambda: found(rp, hidden=include_hidden, cap=cap))
        match = self._finder.matching
        return await self._in_thread(lambda: match(rp, pattern, hidden=include_hidden, cap=cap))

    async def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        ignore_case: bool = False,
        include_hidden: bool = False,
        max_matches: int | None = None,
    ) -> list[GrepMatch]:
        """Lines matching the regular expression ``pattern`` in the files below ``path`` (or
        in the file ``path``), filtered by a file-name ``glob``. Binary, oversized, hidden
        and denied files are skipped; at most ``max_matches`` (default
        ``limits.max_grep_matches``)."""
        rp = self._gate(path, "read")
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise WorkspaceError(
                f"Invalid regular expression {pattern!r}: {exc}",
                hint="patterns use Python's re syntax; escape literal characters with \\",
            ) from exc
        if not rp.abs.exists():
            raise WorkspaceError(f"Not a file or directory: {rp.display()}")
        cap = max_matches or self.limits.max_grep_matches
        search = self._finder.grep
        return await self._in_thread(
            lambda: search(regex, rp, glob=glob, hidden=include_hidden, cap=cap)
        )

    # -- commands ----------------------------------------------------------------------------

    def _base_env(self) -> dict[str, str]:
        return base_env(os.environ, os.name)

    def _env(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        env = dict(os.environ) if self.inherit_env else self._base_env()
        activate_venv(env, self._root)
        env.update(self.env or {})
        env.update(extra or {})
        return env

    def _prepare(self, command: str, cwd: str) -> Path:
        self._check_open()
        if not isinstance(command, str):
            raise WorkspaceError(f"a command must be a string, got {type(command).__name__}")
        verdict = self.decide_command(command, cwd)
        if verdict == "deny":
            raise PermissionDeniedError(
                f"command {_DENIED}: {command[:200]!r}",
                hint="use another command or the file tools, or ask the user to change the "
                "workspace policy",
            )
        where = self._resolve(cwd)
        if not where.abs.is_dir():
            raise WorkspaceError(f"Not a directory: {where.display()} (cwd)")
        return where.abs

    async def _started(self, command: str, cwd: Path, env: Mapping[str, str], merge: bool) -> Any:
        proc = await start_process(command, cwd=cwd, env=env, merge_output=merge)
        if self._closed:  # closed while the process was starting: it must not outlive us
            kill_process_group(proc)
            await wait_exit(proc, _REAP_GRACE)
            close_transport(proc)
            self._check_open()
        return proc

    async def run(
        self,
        command: str,
        *,
        cwd: str = ".",
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run a shell command in ``cwd`` and wait for it, at most ``timeout`` seconds
        (default ``shell_timeout``); then it is killed with its process group. Its stdout
        and stderr are each cut to ``limits.max_shell_output_chars`` (head and tail)."""
        where = self._prepare(command, cwd)
        limit = timeout if timeout is not None else self.shell_timeout
        full_env = self._env(env)
        if self.executor is not None:
            raw = await self.executor.run(
                command,
                cwd=where,
                env=full_env,
                timeout=limit,
                policy=self.policy,
                root=self._root,
            )
            return clip_result(raw, self.limits.max_shell_output_chars)
        proc = await self._started(command, where, full_env, merge=False)
        self._procs.add(proc)
        try:
            return await run_command(proc, timeout=limit, limit=self.limits.max_shell_output_chars)
        finally:
            self._procs.discard(proc)

    async def spawn(
        self, command: str, *, cwd: str = ".", env: Mapping[str, str] | None = None
    ) -> ProcessStart:
        """Start ``command`` in the background and return at once; read it with
        ``read_process_output``, stop it with ``kill_process``. Judged as ``run`` is; no
        timeout; it dies with the session."""
        where = self._prepare(command, cwd)
        if self.executor is not None:
            raise WorkspaceError(
                "background processes cannot start under a custom executor",
                hint="the executor runs one-shot commands only; run this without background=true",
            )
        proc = await self._started(command, where, self._env(env), merge=True)
        bp = BackgroundProcess(proc, command, self.limits.max_shell_output_chars)
        self._bg.add(bp)
        return ProcessStart(process_id=bp.id, pid=proc.pid, command=command)

    async def read_process_output(self, process_id: str) -> ProcessOutput:
        """What the process wrote since the last read, and its state (an exited process
        reports its exit code; never an error). An unknown id raises, naming the known
        ones."""
        self._check_open()
        return await self._bg.read(process_id)

    async def kill_process(self, process_id: str) -> ProcessOutput:
        """Kill the process with its whole group; returns its last output and state."""
        self._check_open()
        return await self._bg.kill(process_id)

    def background_processes(self) -> list[ProcessStatus]:
        """The state of every background process, taking no output (``[]`` once closed)."""
        return [] if self._closed else self._bg.statuses()

    async def close(self) -> None:
        """Kill every command and background process this session started, with their
        process groups. Later calls raise ``WorkspaceClosedError``. Safe to call twice."""
        self._closed = True
        running, self._procs = list(self._procs), set()
        for proc in running:
            kill_process_group(proc)
        await asyncio.gather(self._bg.close(), *(wait_exit(proc, _REAP_GRACE) for proc in running))
