"""The served agents' ``Memory`` plugins: found for the Memory editor's routes
(``api_memory``), drained when the server stops (``RouterDeps.lifespan``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["drain_memories", "memory_of"]


def memory_of(agent: Agent) -> Any:
    """The agent's ``Memory`` plugin, or ``None``."""
    for plugin in agent.plugins or ():
        if getattr(plugin, "name", "") == "memory" and hasattr(plugin, "replace_notes"):
            return plugin
    return None


async def drain_memories(agents: Any) -> None:
    """Let each agent's Memory finish the curation it runs in the background (on shutdown:
    the last run's notes are written, not dropped)."""
    for agent in agents:
        memory = memory_of(agent)
        drain = getattr(memory, "drain", None)
        if drain is not None:
            try:
                await asyncio.wait_for(drain(), timeout=30)
            except Exception:  # a curation that fails is the plugin's to log
                pass
