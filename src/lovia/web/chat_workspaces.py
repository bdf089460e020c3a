"""Chat-scoped workspace sessions: a served chat keeps one live workspace session across its
runs, so a background process (``shell(..., background=True)``) started in one run is still
there, listed and readable, in the next.

The server binds a chat's run to the chat's session when the run starts here (a run a worker
drives keeps one session per run, as outside the server). The session ends, with its
processes, when the chat is deleted or the server stops; a restart does not bring it back.
Only a workspace that opens a session per run (``close_after_run``, as ``Workspace.local``
makes) is bound: a session the app handed to the agent itself (``LocalWorkspace.bind``) is
the app's, shared as it is.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..agent import Agent
    from ..workspace.protocol import WorkspaceSession

__all__ = ["ChatWorkspaces"]

log = logging.getLogger("lovia.web")


class ChatWorkspaces:
    """The live workspace session of each chat of this server (one per chat and workspace)."""

    def __init__(self) -> None:
        self._live: dict[str, tuple[Any, WorkspaceSession]] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    async def bind(self, chat_id: str, agent: Agent) -> Agent:
        """``agent`` with its workspace bound to ``chat_id``'s session (opened on first use);
        ``agent`` itself when its workspace is not one to bind."""
        workspace = getattr(agent, "workspace", None)
        if (
            workspace is None
            or not getattr(workspace, "close_after_run", False)
            or not callable(getattr(workspace, "bind", None))
        ):
            return agent
        async with self._lock:
            if self._closed:
                return agent  # shutting down: the run gets a session of its own
            held = self._live.get(chat_id)
            if held is None or not _same(held[0], workspace):
                if held is not None:  # the chat's agent changed workspace: the old one ends
                    self._live.pop(chat_id, None)
                    await _close(chat_id, held[1])
                try:
                    held = (workspace, await workspace.open())
                except Exception as exc:  # the run opens its own, and fails as any run would
                    log.warning("opening the workspace session of chat %s: %s", chat_id, exc)
                    return agent
                self._live[chat_id] = held
        return agent.clone(workspace=workspace.bind(held[1]))

    def get(self, chat_id: str) -> WorkspaceSession | None:
        """The chat's live session, if it has one on this server."""
        held = self._live.get(chat_id)
        return None if held is None else held[1]

    async def close(self, chat_id: str) -> None:
        """End the chat's session and its background processes (the chat was deleted)."""
        async with self._lock:
            held = self._live.pop(chat_id, None)
        if held is not None:
            await _close(chat_id, held[1])

    async def aclose(self) -> None:
        """End every chat's session (the server stops); later runs get sessions of their own."""
        async with self._lock:
            self._closed = True
            held, self._live = self._live, {}
        for chat_id, (_, session) in held.items():
            await _close(chat_id, session)


def _same(held: Any, workspace: Any) -> bool:
    """Whether ``workspace`` is the one the chat's session was opened on: the same object or
    an equal configuration (a Settings change rebuilds the agent with an equal
    ``Workspace.local``, and the chat's processes go on)."""
    if held is workspace:
        return True
    try:
        return bool(held == workspace)
    except Exception:  # a configuration that cannot be compared is another one
        return False


async def _close(chat_id: str, session: WorkspaceSession) -> None:
    try:
        await session.close()
    except Exception as exc:  # a process that would not die is logged, never fatal
        log.warning("closing the workspace session of chat %s: %s", chat_id, exc)
