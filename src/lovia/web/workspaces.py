"""0.9.119's module path for a served chat's workspace sessions: ``WorkspaceSessions`` is
``lovia.web.chat_workspaces.ChatWorkspaces`` (``RouterDeps.workspaces``)."""

from __future__ import annotations

from .chat_workspaces import ChatWorkspaces as WorkspaceSessions

__all__ = ["WorkspaceSessions"]
