"""A chat that another chat's agent starts (the ``Scheduling`` plugin's ``start_session``).

The new chat is a top-level chat of its own: its row says where it came from
(``origin.kind == "spawn"``), it starts with none of the source's history, and its run (source
``spawn:<chat>``) is an ordinary checkpointed run of the server, in the client context of the
run that started it. Nothing is reported back, and deleting either chat leaves the other.
It counts against ``max_background_runs``: at the limit nothing is made.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LoviaError, ToolError
from .side_deps import SideDeps

if TYPE_CHECKING:
    from ..agent import Agent
    from ..chats.runstart import RunStart
    from ..chats.supervisor import RunSupervisor
    from .chat_workspaces import ChatWorkspaces

__all__ = ["SpawnDeps", "spawn_chat"]


class SpawnDeps(SideDeps, Protocol):
    """What a spawn reads of ``RouterDeps`` (a protocol, so this module stands below it)."""

    max_background_runs: int
    workspaces: ChatWorkspaces

    @property
    def supervisor(self) -> RunSupervisor: ...

    async def run_start(
        self, session_id: str, agent: Agent, *, source: str = ..., context: Any = ...
    ) -> RunStart: ...


async def spawn_chat(
    deps: SpawnDeps,
    origin: str,
    text: str,
    title: str | None,
    context: Mapping[str, Any] | None,
) -> dict[str, str]:
    """Open a chat from ``origin`` and start its agent on ``text``; ``ToolError`` (nothing
    kept) when the server cannot."""
    sup = deps.supervisor
    if sup.closing:
        raise ToolError("Nothing started: the server is shutting down.")
    if len(sup.live) >= deps.max_background_runs:
        raise ToolError(
            f"Nothing started: the server is at its concurrent-run limit ({len(sup.live)} "
            "runs live).",
            hint="wait for other runs to finish, then try again",
        )
    meta = await deps.store.get(origin)
    wanted = meta.agent if meta is not None and meta.agent in deps.agents else None
    try:
        agent = sup.agent(wanted)
    except LoviaError as exc:
        raise ToolError(f"Couldn't start a chat: {exc}") from exc
    served = sup.served_name(agent) or agent.name
    chat_id = uuid.uuid4().hex
    try:
        how = await deps.run_start(
            chat_id, agent, source=f"spawn:{origin}", context=dict(context) if context else None
        )
    except Exception as exc:  # run_deps refused it (an HTTPException, say): nothing made
        raise ToolError(f"The new chat's run was refused: {exc}") from exc
    named = (title or "").strip() or None
    await deps.store.upsert(chat_id, agent=served, title=named or text, spawned_from=origin)
    try:
        await sup.send(chat_id, text, agent_name=served, start=how)
    except BaseException as exc:  # refused, or the call was cancelled part way: no chat left
        await asyncio.shield(_forget(deps, chat_id))
        if isinstance(exc, Exception):
            raise ToolError(f"Nothing started: {exc}") from exc
        raise
    row = await deps.store.get(chat_id)
    shown = row.title if row is not None and row.title else (named or text)
    deps.emit("session_created", {"session_id": chat_id, "agent": served, "title": shown})
    if named is None:
        from .titles import TitleMaker

        TitleMaker(deps).start(chat_id, text)
    return {"session_id": chat_id, "title": shown, "status": "started"}


async def _forget(deps: SpawnDeps, chat_id: str) -> None:
    """Undo a chat whose start failed: its workspace session (bound as its run started) and
    its row."""
    await deps.workspaces.close(chat_id)
    await deps.store.delete(chat_id, schedules=False)
