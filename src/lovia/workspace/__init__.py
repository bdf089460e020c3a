"""Workspaces: a root directory, a policy, and the file and shell tools an agent uses there.

``Agent(workspace=Workspace.local("path", mode="coding"))`` gives the agent the tools its
policy permits; ``await Workspace.local(...).open()`` gives a program (or a custom tool, as
``ctx.workspace``) the same session the tools use. Paths and commands are judged by one
three-valued ACL: ``deny`` is enforced by the session, ``ask`` goes through the run's
approvals. The local workspace is a policy gate over the host's shell, not a sandbox.
"""

from __future__ import annotations

from .errors import (
    FileTooLargeError,
    PermissionDeniedError,
    WorkspaceClosedError,
    WorkspaceError,
)
from .local import LocalWorkspaceSession
from .policy import CommandRule, Decision, FileOp, PathRule, WorkspacePolicy
from .protocol import ShellExecutor as ShellExecutor
from .protocol import WorkspaceLike as WorkspaceLike
from .protocol import WorkspaceSession as WorkspaceSession
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
    WorkspaceMode,
)
from .workspace import SCRATCH_DIR, LocalWorkspace, Workspace
from .workspace import WorkspaceSessionBinding as WorkspaceSessionBinding

__all__ = [
    "SCRATCH_DIR",
    "CommandResult",
    "CommandRule",
    "Decision",
    "DirEntry",
    "EditResult",
    "FileBytes",
    "FileChange",
    "FileContent",
    "FileOp",
    "FileTooLargeError",
    "GrepMatch",
    "LocalWorkspace",
    "LocalWorkspaceSession",
    "PathRule",
    "PermissionDeniedError",
    "ProcessOutput",
    "ProcessStart",
    "ProcessStatus",
    "Workspace",
    "WorkspaceClosedError",
    "WorkspaceError",
    "WorkspaceLimits",
    "WorkspaceMode",
    "WorkspacePolicy",
]
