"""What the server serves and does now: ``/api/info``, ``/api/agents``, ``/api/runs`` (live
runs), ``/api/runs/history`` (run records), ``/api/events`` (lifecycle events, SSE) and, for
this server's own page, ``/api/runs/resumable`` (runs a restart, crash or error left
unfinished)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from .. import __version__
from ..chats.book import awaiting_approval
from ..chats.supervisor import NO_MODEL_HINT
from .errors import WebError
from .wire import encode

if TYPE_CHECKING:
    from ..agent import Agent
    from .deps import RouterDeps

__all__ = ["agent_info", "server_routes"]


def _model_name(agent: Agent) -> str | None:
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else None


def _context_window(agent: Agent, server_policy: Any) -> int | None:
    for policy in (server_policy, getattr(agent, "context_policy", None)):
        window = getattr(policy, "context_window", None)
        if isinstance(window, int) and window > 0:
            return window
    # Else the window the model's provider reports through ``context_window()`` (0.9.119's
    # fallback), so the page's meter shows for a provider that knows its model.
    method = getattr(getattr(agent, "model", None), "context_window", None)
    try:
        window = method() if callable(method) else None
    except Exception:
        return None
    ok = isinstance(window, int) and not isinstance(window, bool) and window > 0
    return window if ok else None


def _is_demo(agent: Agent) -> bool:
    from ..demo import DemoProvider

    return isinstance(agent.model, DemoProvider)


def _has_memory(agent: Agent) -> bool:
    return any(getattr(p, "name", "") == "memory" for p in agent.plugins or ())


def agent_info(name: str, agent: Agent, deps: RouterDeps) -> dict[str, Any]:
    """An agent as ``/api/agents`` shows it: 0.9.119's fields, and only those (what this
    server adds about its agents, which is the demo and which cannot be used, is in
    ``/api/info``: ``demo_agents``, ``problems``)."""
    from .attachments import workspace_root

    return {
        "name": name,
        "instructions": agent.instructions if isinstance(agent.instructions, str) else None,
        "tools": [t.name for t in agent.tools or ()],
        "workspace": workspace_root(agent) is not None,
        "memory": _has_memory(agent),
        "context_window": _context_window(agent, deps.context_policy),
        "model": _model_name(agent),
    }


def server_routes(deps: RouterDeps) -> APIRouter:  # noqa: C901 - one closure per route
    router = APIRouter(tags=["server"])
    sup = deps.supervisor

    async def problems() -> list[dict[str, Any]]:
        return [p.to_dict() for p in await sup.setup.problems()]

    @router.get("/api/info", summary="Title, agents, version and features")
    async def info() -> dict[str, Any]:
        """Beside 0.9.119's fields: ``demo`` (an agent is the offline demo) and
        ``demo_agents`` (which), ``setup_problem`` (why a model cannot be used, with a
        ``hint``; ``blocking`` when every message to that ``agent`` would fail),
        ``problems`` (all of them)."""
        found = await problems()
        first: dict[str, Any] | None = found[0] if found else None
        if not deps.agents:
            first = {
                "agent": None,
                "message": "no model is configured",
                "hint": NO_MODEL_HINT,
                "blocking": True,
            }
        agents = deps.agents.values()
        return {
            "title": deps.title,
            "agents": list(deps.agents),
            "default_agent": deps.default_agent,
            "version": __version__,
            "configured": bool(deps.agents),
            "features": {
                "checkpointing": True,
                "titles": bool(deps.titles),
                "followups": bool(deps.followups),
                "scheduling": True,
                "workspace": any(agent_info("", a, deps)["workspace"] for a in agents),
                "memory": any(_has_memory(a) for a in agents),
                "rewind": sup.chats.can_rewind,
                "events": True,
                "model_config": deps.config_runtime is not None,
            },
            "demo": any(_is_demo(a) for a in agents),
            "demo_agents": [n for n, a in deps.agents.items() if _is_demo(a)],
            "setup_problem": first,
            "setup_hint": first["hint"] if first else None,
            "problems": found,
        }

    @router.get("/api/agents", summary="The served agents")
    async def agents() -> list[dict[str, Any]]:
        return [agent_info(n, a, deps) for n, a in deps.agents.items()]

    @router.get("/api/agents/{name}", summary="One served agent")
    async def agent(name: str) -> dict[str, Any]:
        found = deps.agents.get(name)
        if found is None:
            raise WebError(
                404,
                "agent_not_found",
                f"unknown agent {name!r}",
                f"use one of: {', '.join(deps.agents)}",
            )
        return agent_info(name, found, deps)

    async def _source_of(chat_id: str | None, run_id: str) -> str | None:
        """Why the run started (``user``, ``schedule:<id>``...), from its run record."""
        if chat_id is None:
            return None
        for row in await deps.store.list_runs(session_id=chat_id, limit=20):
            if row.id == run_id:
                return row.source
        return None

    @router.get("/api/runs", summary="Runs live on this server, and runs awaiting approval")
    async def live_runs() -> list[dict[str, Any]]:
        """A run parked until a person decides on a call is listed as 0.9.119 listed its
        waiting run, ``blocked_on_approval`` (here it is in the database, any server's)."""
        waiting = [
            run
            for run in await sup.chats.pending_runs()
            if awaiting_approval(run) and run.session_id not in sup.live
        ]
        parked = [
            {
                "session_id": run.session_id,
                "run_id": run.run_id,
                "agent": run.agent_name,
                "status": "blocked_on_approval",
                "turns": run.head.turns,
                "source": await _source_of(run.session_id, run.run_id),
                "started_at": run.head.started_at,
            }
            for run in waiting
        ]
        return parked + [
            {
                "session_id": chat_id,
                "run_id": run.run_id,
                "agent": run.served_as,
                "status": "running",
                "turns": sum(1 for e in run.events if e.get("type") == "turn_started"),
                "source": run.source,
                "started_at": run.started_at,
            }
            for chat_id, run in list(sup.live.items())
            if run.task is not None  # started: its observers have recorded it
        ]

    @router.get("/api/runs/history", summary="Run records, newest first")
    async def history(
        session_id: Annotated[str | None, Query(max_length=512)] = None,
        source: Annotated[str | None, Query(max_length=200)] = None,
        since: float | None = None,
        limit: Annotated[int, Query(ge=1, le=500)] = 50,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> list[dict[str, Any]]:
        """``since``: only runs that finished after that time (epoch seconds)."""
        rows = await deps.store.list_runs(
            session_id=session_id, source=source, since=since, limit=limit, offset=offset
        )
        out = []
        for row in rows:
            item = row.to_dict()
            item["run_id"] = item.pop("id")
            out.append(item)
        return out

    @router.get("/api/runs/resumable", summary="Runs a restart, crash or error left unfinished")
    async def resumable() -> list[dict[str, Any]]:
        runs = [r for r in await sup.chats.pending_runs() if not sup.busy_here(r.session_id or "")]
        titles = await sup.chats.run_titles(runs)
        return [
            {
                "run_id": run.run_id,
                "session_id": run.session_id,
                "status": run.status,
                "agent": run.agent_name,
                "updated_at": run.updated_at,
                "title": titles.get(run.run_id),
                "error": run.error,
                "awaiting_approval": awaiting_approval(run),
                "busy_elsewhere": await sup.chats.claim_holder(run.session_id or "") is not None
                or await sup.chats.run_holder(run.run_id) is not None,
            }
            for run in runs
        ]

    @router.get(
        "/api/events",
        response_class=StreamingResponse,
        summary="Lifecycle events, as they happen (SSE, no history)",
    )
    async def events() -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b": lifecycle events\n\n"
            async for name, data in deps.bus.subscribe():
                yield encode(name, data)

        return StreamingResponse(
            body(), media_type="text/event-stream", headers={"Cache-Control": "no-store"}
        )

    return router
