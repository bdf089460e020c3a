"""``create_app``: the FastAPI app (the JSON + SSE API, and the chat page), and ``serve``.

::

    from lovia.web import create_app, serve
    serve(agent)                                  # 127.0.0.1:8000, chats in ./.lovia/<agent>.db
    app = create_app(agent, db_path="chats.db")   # ... or run it with any ASGI server
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request

from .. import __version__
from ..agent import Agent
from ..errors import UserError
from .auth import LoopbackOnly, SameOriginWrites, cors_allowed_origins, token_dependency
from .deps import RouterDeps
from .errors import add_error_handlers
from .ids import ApiPaths
from .limits import BodyLimit
from .page import mount_page
from .router import build_api_router
from .store import ChatStore
from .ui import ChatUI

__all__ = ["create_app", "default_store"]

log = logging.getLogger("lovia.web")
MAX_BODY_BYTES = 512 * 1024


def _agents_by_name(agents: Agent | Mapping[str, Agent]) -> dict[str, Agent]:
    if isinstance(agents, Agent):
        return {agents.name: agents}
    if not isinstance(agents, Mapping):
        raise UserError(
            f"create_app needs an Agent or a {{name: agent}} mapping, got {type(agents).__name__}"
        )
    for name, agent in agents.items():
        if not isinstance(agent, Agent):
            raise UserError(f"agents[{name!r}] is a {type(agent).__name__}, not an Agent")
    return dict(agents)


def default_store(agents: Mapping[str, Agent]) -> ChatStore:
    """``./.lovia/<first agent's name>.db``, where lovia 0.9.119 kept them."""
    name = next(iter(agents), "lovia")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "lovia"
    return ChatStore.sqlite(Path(".lovia") / f"{safe}.db")


def _pick_store(
    named: Mapping[str, Agent],
    store: ChatStore | None,
    db_path: str | Path | None,
    session: Any,
    checkpointer: Any,
) -> ChatStore:
    if store is not None:
        return store
    if db_path is not None:
        return ChatStore.sqlite(db_path)
    if session is not None or checkpointer is not None:
        from ..stores.memory import InMemorySession

        return ChatStore(session or InMemorySession(), checkpointer=checkpointer)
    return default_store(named)


def _check_max_turns(max_turns: object) -> None:
    if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
        raise UserError(f"max_turns must be a whole number >= 1, got {max_turns!r}")


def create_app(  # noqa: C901 - one keyword per option
    agent_or_agents: Agent | Mapping[str, Agent],
    *,
    db_path: str | Path | None = None,
    session: Any = None,
    store: ChatStore | None = None,
    context_policy: Any = None,
    title_model: Any = None,
    titles: bool = True,
    followups: Any = False,
    followup_model: Any = None,
    title: str = "lovia",
    max_turns: int = 50,
    budget: Any = None,
    retry: Any = None,
    tracer: Any = None,
    max_background_runs: int = 8,
    approval_timeout: float | None = None,
    question_channel: Any = None,
    question_timeout: float | None = None,
    scheduler_poll: float = 1.0,
    wire_subagents: bool = True,
    ui: bool | ChatUI = True,
    cors_origins: Sequence[str] | None = None,
    token: str | None = None,
    auth: Callable[..., Any] | None = None,
    lifespan: Any = None,
    config_runtime: Any = None,
    run_deps: Any = None,
    checkpointer: Any = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    lease_ttl: float = 30.0,
    body_timeout: float = 30.0,
    queue: Any = None,
) -> FastAPI:
    """The chat server for one agent or ``{name: agent}``: the API under ``/api`` (its
    schema at ``/api/docs``) and, unless ``ui=False``, the chat page at ``/``.

    Storage, first given wins: ``store``; ``db_path`` (one SQLite file); ``session`` (and
    ``checkpointer``) with the chat tables in memory; else ``./.lovia/<agent>.db``.

    Without ``token`` or ``auth`` only this machine is served (a loopback client, a
    loopback ``Host``; 403 / 400 otherwise) and a write from a page of another site gets
    403. ``token`` guards every ``/api`` route (``Authorization: Bearer`` or the cookie
    ``/?token=...`` sets); ``auth`` is your own FastAPI dependency instead. ``lifespan``
    wraps the server's own (your resources are up before the first run and closed after
    the last). Bodies over ``max_body_bytes`` get 413, bodies slower than
    ``body_timeout`` seconds 408; a crashed server's chats stay locked ``lease_ttl``
    seconds for the servers sharing its database.

    ``queue`` (a ``lovia.workers.AgentQueue`` on the PostgreSQL database of ``store``)
    hands each chat's runs to ``lovia worker`` processes: a message queues its run (the
    run's row and job in one transaction) and the chat's stream follows it from the
    database, a model turn at a time.
    """
    named = _agents_by_name(agent_or_agents)
    _check_max_turns(max_turns)
    if token is not None:
        token = token.strip()
        if not token:
            raise ValueError("token must be non-empty (it could never be presented)")
        if auth is not None:
            raise ValueError("give create_app a token or an auth dependency, not both")
    if isinstance(ui, ChatUI) or ui is True:
        page_ui: ChatUI | None = _demo_welcome(ui if isinstance(ui, ChatUI) else ChatUI(), named)
    else:
        page_ui = None
    questions = None
    if question_channel is not None:
        from .questions import QuestionRegistry

        questions = QuestionRegistry(question_channel, timeout=question_timeout)
    deps = RouterDeps(
        agents=named,
        store=_pick_store(named, store, db_path, session, checkpointer),
        title=title,
        context_policy=context_policy,
        title_model=title_model,
        titles=titles,
        followups=followups,
        followup_model=followup_model,
        max_turns=max_turns,
        budget=budget,
        retry=retry,
        tracer=tracer,
        max_background_runs=max_background_runs,
        approval_timeout=approval_timeout,
        scheduler_poll=scheduler_poll,
        questions=questions,
        config_runtime=config_runtime,
        run_deps=run_deps,
        lease_ttl=lease_ttl,
        queue=queue,
    )
    if wire_subagents:
        from .subagents import wire_subagents as wire

        wire(deps)

    @contextlib.asynccontextmanager
    async def both(app: FastAPI) -> AsyncIterator[Any]:
        # yours wrap ours: your resources are up before the first run, closed after the last
        async with contextlib.AsyncExitStack() as stack:
            state = None if lifespan is None else await stack.enter_async_context(lifespan(app))
            await stack.enter_async_context(deps.lifespan(app))
            if questions is not None:
                questions.start()
                stack.push_async_callback(questions.aclose)
            yield state

    app = FastAPI(
        title=title,
        version=__version__,
        description="Chat with lovia agents; every run is checkpointed and resumable.",
        lifespan=both,
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
        redoc_url=None,
    )
    app.state.deps = deps
    app.state.supervisor = deps.supervisor
    app.state.guarded = token is not None or auth is not None
    app.state.token = token
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, timeout=body_timeout)
    app.add_middleware(ApiPaths)  # an id's '/' travels in its '~' form; escapes are UTF-8
    allowed = tuple(cors_origins or ())

    def origins() -> list[str]:  # yours included: CORSMiddleware added after create_app
        return cors_allowed_origins(app, allowed)

    if token is None and auth is None:  # only loopback pages may talk to it
        app.add_middleware(LoopbackOnly, origins=origins)
    else:  # a cookie reaches every port of the host: writes must come from this origin
        app.add_middleware(SameOriginWrites, origins=origins)
    if cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
        )

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    guard: list[Any] = []
    if auth is not None:
        guard = [Depends(auth)]
    elif token is not None:
        guard = [Depends(token_dependency(token))]
    add_error_handlers(app)
    app.include_router(build_api_router(deps), dependencies=guard)
    if page_ui is not None:
        mount_page(app, token, title, page_ui)
    return app


def _demo_welcome(ui: ChatUI, agents: Mapping[str, Agent]) -> ChatUI:
    """The demo agent's blank chat: what it is and what to try, unless ``ui`` says."""
    from ..demo import DEMO_EXAMPLES, DemoProvider

    if ui.empty_examples or not agents:
        return ui
    if not all(isinstance(a.model, DemoProvider) for a in agents.values()):
        return ui
    return dataclasses.replace(
        ui,
        empty_title=ui.empty_title or "lovia demo",
        empty_description=ui.empty_description
        or "An offline, scripted agent: no model is called. Try one of these:",
        empty_examples=DEMO_EXAMPLES,
    )


def current_deps(request: Request) -> RouterDeps:
    """The ``RouterDeps`` of the app serving ``request``."""
    found: RouterDeps = request.app.state.deps
    return found
