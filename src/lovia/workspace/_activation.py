"""What a run does with ``Agent(workspace=...)``: open its session and contribute it to the
run like a plugin (tools, the ``## Workspace`` instructions, the per-turn reminder, and the
session's close when the run ends, whatever its outcome)."""

from __future__ import annotations

from ..plugins.base import PluginInstance, fail_open
from .protocol import WorkspaceLike, WorkspaceSession

__all__ = ["open_for_run"]


async def _keep_open() -> None:
    return None


async def open_for_run(workspace: WorkspaceLike) -> tuple[WorkspaceSession, PluginInstance]:
    """A session of ``workspace`` for one agent of one run, and its contributions."""
    session = await workspace.open()
    injectors = getattr(workspace, "view_injectors", None)  # optional for older configurations
    return session, PluginInstance(
        tools=list(workspace.tools()),
        instructions=workspace.instructions() or None,
        view_injectors=[fail_open(i, "workspace") for i in (injectors() if injectors else ())],
        aclose=session.close if workspace.close_after_run else _keep_open,
    )
