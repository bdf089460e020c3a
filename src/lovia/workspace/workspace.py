"""``Workspace.local(...)``: the workspace configuration an agent takes.

``Workspace`` only builds configurations; ``LocalWorkspace`` is the one for a local
directory. A run opens a session from it for each agent that has it, offers the model the
tools its policy permits, adds the ``## Workspace`` section to the system prompt, and closes
the session when the run ends. ``LocalWorkspace.session()`` / ``bind()`` keep one session
open across runs instead (a chat whose dev server must outlive one message).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import UserError
from ._prompt import SCRATCH_DIR, workspace_instructions
from .local import LocalWorkspaceSession
from .policy import CommandRule, PathRule, WorkspacePolicy
from .protocol import ShellExecutor, WorkspaceSession
from .types import WorkspaceLimits, WorkspaceMode

if TYPE_CHECKING:
    from ..tools.base import Tool

__all__ = ["SCRATCH_DIR", "LocalWorkspace", "Workspace", "WorkspaceSessionBinding"]


@dataclass(frozen=True)
class LocalWorkspace:
    """A local directory as a workspace: its root, policy, shell environment and limits.
    Build it with ``Workspace.local(...)``. The policy is a gate, not OS isolation."""

    root: str
    policy: WorkspacePolicy = field(default_factory=WorkspacePolicy.coding)
    env: Mapping[str, str] | None = None
    shell_timeout: float | None = 300.0
    limits: WorkspaceLimits = field(default_factory=WorkspaceLimits)
    inherit_env: bool = False
    executor: ShellExecutor | None = None
    close_after_run: bool = True

    async def open(self) -> LocalWorkspaceSession:
        """A new live session on this workspace."""
        return LocalWorkspaceSession(
            root=self.root,
            policy=self.policy,
            env=self.env,
            shell_timeout=self.shell_timeout,
            limits=self.limits,
            inherit_env=self.inherit_env,
            executor=self.executor,
        )

    @asynccontextmanager
    async def session(self) -> AsyncIterator[WorkspaceSessionBinding]:
        """One session kept open for the block: pass the binding as ``Agent(workspace=...)``
        and every run uses it (and does not close it)."""
        live = await self.open()
        try:
            yield self.bind(live)
        finally:
            await live.close()

    def bind(self, session: WorkspaceSession) -> WorkspaceSessionBinding:
        """A configuration that hands runs ``session`` (yours to close) instead of opening
        one each: the way to keep background processes alive from one run to the next."""
        return WorkspaceSessionBinding(workspace=self, _session=session)

    def tools(self) -> list[Tool]:
        """The tools this policy permits: reading always; writing unless no write can be
        allowed; the shell and its background-process tools when there is a shell."""
        from . import tools as t

        bundle = [t.read_file, t.view_image, t.list_files, t.grep_files]
        if self.policy.write != "deny" or self.policy.write_outside != "deny":
            bundle += [t.write_file, t.edit_file]
        if self.policy.allow_shell:
            bundle += [t.shell, t.read_process_output, t.kill_process]
        return bundle

    def view_injectors(self) -> list[Any]:
        """The per-turn reminder of running and finished background processes (none without
        a shell)."""
        from .tools import background_process_reminder

        return [background_process_reminder] if self.policy.allow_shell else []

    def instructions(self) -> str:
        """The ``## Workspace`` section of the system prompt, written from the policy."""
        return workspace_instructions(self.root, self.policy)


@dataclass(frozen=True)
class WorkspaceSessionBinding:
    """A live session handed to every run as it is (``close_after_run`` is false: its
    owner closes it). Made by ``LocalWorkspace.bind`` or ``LocalWorkspace.session``."""

    workspace: LocalWorkspace
    _session: WorkspaceSession
    close_after_run: bool = False

    async def open(self) -> WorkspaceSession:
        return self._session

    def tools(self) -> list[Tool]:
        return self.workspace.tools()

    def instructions(self) -> str:
        return self.workspace.instructions()

    def view_injectors(self) -> list[Any]:
        return self.workspace.view_injectors()


class Workspace:
    """Builds workspace configurations: ``Workspace.local(root, mode=...)``. Not instantiated."""

    def __init__(self) -> None:
        raise UserError(
            "Workspace builds configurations and is not instantiated",
            hint="use Workspace.local('path/to/root')",
        )

    @classmethod
    def local(
        cls,
        root: str = ".",
        *,
        mode: WorkspaceMode = "coding",
        policy: WorkspacePolicy | None = None,
        readable: Iterable[str] = (),
        writable: Iterable[str] = (),
        denied_paths: Iterable[str] = (),
        path_rules: Iterable[PathRule] = (),
        command_rules: Iterable[CommandRule] = (),
        env: Mapping[str, str] | None = None,
        shell_timeout: float | None = 300.0,
        inherit_env: bool = False,
        limits: WorkspaceLimits | None = None,
        executor: ShellExecutor | None = None,
    ) -> LocalWorkspace:
        """A local directory as a workspace.

        ``mode`` picks a preset policy (``readonly``, ``coding``, ``trusted``), refined by
        ``readable`` / ``writable`` (grants outside the root; writable implies readable),
        ``denied_paths`` (never read or written), ``path_rules`` and ``command_rules``; or
        ``policy`` replaces all of them. Commands get a minimal environment (no API keys)
        plus ``env``; ``inherit_env=True`` hands them the whole host environment instead.
        """
        rules = (
            *tuple(path_rules),
            *(PathRule(p, "allow") for p in writable),
            *(PathRule(p, "allow", ops=frozenset({"read"})) for p in readable),
        )
        denied, commands = tuple(denied_paths), tuple(command_rules)
        if policy is not None:
            if rules or denied or commands:
                raise UserError(
                    "Pass either policy= or the rule shorthands (readable, writable, "
                    "denied_paths, path_rules, command_rules), not both",
                    hint="put the rules inside your WorkspacePolicy",
                )
        elif mode == "readonly":
            if commands:
                raise UserError(
                    "mode='readonly' has no shell, so command_rules would never apply",
                    hint="drop command_rules, or use mode='coding'",
                )
            policy = WorkspacePolicy.readonly(denied_paths=denied, path_rules=rules)
        elif mode in ("coding", "trusted"):
            preset = WorkspacePolicy.coding if mode == "coding" else WorkspacePolicy.trusted
            policy = preset(denied_paths=denied, path_rules=rules, command_rules=commands)
        else:
            raise UserError(
                f"Unknown workspace mode: {mode!r}", hint="use 'readonly', 'coding' or 'trusted'"
            )
        return LocalWorkspace(
            root=str(root),
            policy=policy,
            env=dict(env) if env is not None else None,
            shell_timeout=shell_timeout,
            limits=limits if limits is not None else WorkspaceLimits(),
            inherit_env=inherit_env,
            executor=executor,
        )

    @classmethod
    def docker(cls, *args: object, **kwargs: object) -> NoReturn:
        """Not available: a container backend would implement the same protocols
        (``lovia.workspace.protocol``); the local workspace is a policy gate, not isolation."""
        raise NotImplementedError(
            "Workspace.docker() is not available; use Workspace.local(...), or a "
            "ShellExecutor that runs commands in a sandbox"
        )
