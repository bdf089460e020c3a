"""The Memory editor's routes: ``GET`` / ``PUT /api/memory`` (an agent's Notes as
``MEMORY.md`` holds them) and ``POST /api/memory/dream`` (tidy them now with one model call).
They read and write through the agent's ``Memory`` plugin, so its own rules apply (bullet
lines, normalised, duplicates dropped, stamped with the month)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from ..errors import LoviaError
from .errors import WebError
from .memories import memory_of

if TYPE_CHECKING:
    from ..agent import Agent
    from .deps import RouterDeps

__all__ = ["memory_routes"]

AgentName = Annotated[str | None, Query(max_length=200)]


class NotesBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(max_length=1_000_000)


def memory_routes(deps: RouterDeps) -> APIRouter:
    router = APIRouter(tags=["memory"])

    def pick(name: str | None) -> tuple[Agent, Any]:
        agent = deps.panel_agent(name)
        memory = memory_of(agent)
        if memory is None:
            raise WebError(404, "feature_unavailable", "agent has no memory")
        return agent, memory

    async def shown(memory: Any) -> dict[str, Any]:
        content: str = await memory.notes_body()
        return {
            "content": content,
            "used": len(content),
            "budget": memory.notes_budget,
            "dreamed_at": memory.dreamed_at(),
        }

    @router.get("/api/memory", summary="An agent's Memory notes")
    async def get_notes(agent: AgentName = None) -> dict[str, Any]:
        """``{content, used, budget, dreamed_at}``: ``used`` and ``budget`` in characters."""
        return await shown(pick(agent)[1])

    @router.put("/api/memory", summary="Replace an agent's Memory notes")
    async def put_notes(body: NotesBody, agent: AgentName = None) -> dict[str, Any]:
        """Only ``- fact`` lines are kept (normalised, duplicates dropped, stamped with this
        month); an empty ``content`` clears the notes. Every chat reads them at its next
        run."""
        memory = pick(agent)[1]
        await memory.replace_notes(body.content)
        return await shown(memory)

    @router.post("/api/memory/dream", summary="Tidy an agent's Memory notes now")
    async def dream(agent: AgentName = None) -> dict[str, Any]:
        """One model call merges duplicates and settles contradictions; ``before`` and
        ``after`` count the notes (the old ones are kept in ``MEMORY.md.bak``)."""
        served, memory = pick(agent)
        try:
            before, after = await memory.dream(getattr(memory, "model", None) or served.model)
        except LoviaError as exc:
            raise WebError(
                500, "run_failed", f"the dream failed: {exc.message}", exc.hint or None
            ) from None
        return {**await shown(memory), "before": before, "after": after}

    return router
