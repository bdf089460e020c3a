"""``create_app``: the FastAPI app behind ``lovia web`` (JSON + SSE API, and the page).

::

    from lovia.web import create_app
    app = create_app({"assistant": agent}, session=SQLiteSession(db, wal=True),
                     checkpointer=SQLiteCheckpointer(db, wal=True))
    # uvicorn app:app   (OpenAPI docs at /docs)
"""

from __future__ import annotations

import contextlib
import html
import logging
from collections.abc import AsyncIterator, Mapping
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from .. import __version__
from ..agent import Agent
from ..chats.supervisor import RunSupervisor
from ..errors import UserError
from ..stores.checkpoint import Checkpointer
from ..stores.memory import InMemoryCheckpointer, InMemorySession
from ..stores.session import Session
from .auth import LoopbackOnly, SameOriginWrites, cookie_name, token_matches
from .blocking import blocking_router
from .ids import ApiPaths
from .legacy import TitledBook
from .limits import BodyLimit
from .refusals import add_error_handlers
from .routes import router

__all__ = ["create_app"]

log = logging.getLogger("lovia.web")
MAX_BODY_BYTES = 512 * 1024
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def create_app(
    agents: Agent | Mapping[str, Agent],
    *,
    session: Session | None = None,
    checkpointer: Checkpointer | None = None,
    ui: bool = True,
    token: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    lease_ttl: float = 30.0,
    body_timeout: float = 30.0,
    max_turns: int = 50,
    title: str = "lovia",
) -> FastAPI:
    """The chat server for ``agents`` (one agent or ``{name: agent}``; empty = no model).

    Without stores it keeps chats in memory (gone on restart); pass ``SQLiteSession`` and
    ``SQLiteCheckpointer`` for durable chats and resumable runs. With ``token``, every
    ``/api`` route needs ``Authorization: Bearer <token>`` or the cookie set by
    ``/?token=<token>``; otherwise it answers 401, and a POST/DELETE that carries the cookie
    from a page of another origin gets 403. Request bodies over ``max_body_bytes`` get 413,
    bodies not complete within ``body_timeout`` seconds 408. Without ``token`` only clients on
    this machine are served (403 otherwise, whatever address the server listens on), only a
    loopback ``Host`` (400 otherwise), and a POST/DELETE from a page of another origin gets
    403. A run whose server died stays locked for ``lease_ttl`` seconds before another server
    can resume it. ``max_turns`` bounds the model turns of each run; ``title`` is the
    page's title. ``POST /api/chat`` is one blocking turn (``{output, session_id, usage}``)
    for clients of 0.9.119's server; ``GET /healthz`` answers ``{"status": "ok"}`` (a
    liveness probe, no token needed). A chat title that lovia 0.9.119's web server stored
    in the same SQLite file names that chat here too (read, never written).
    """
    named = _agents_by_name(agents)
    _check_max_turns(max_turns)
    chats = TitledBook(session or InMemorySession(), checkpointer or InMemoryCheckpointer())
    supervisor = RunSupervisor(named, chats, lease_ttl=lease_ttl, max_turns=max_turns)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await chats.load_titles()
        unfinished = await chats.pending_runs()
        if unfinished:
            log.warning(
                "%d run(s) did not finish before the last shutdown or crash; the page offers "
                "to resume them (GET /api/runs/resumable)",
                len(unfinished),
            )
        yield
        await supervisor.close()

    app = FastAPI(
        title="lovia",
        version=__version__,
        description="Chat with lovia agents; every run is checkpointed and resumable.",
        lifespan=lifespan,
    )
    app.state.supervisor = supervisor
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, timeout=body_timeout)
    app.add_middleware(ApiPaths)  # an id's '/' travels in its '~' form; escapes are UTF-8
    if token is None:  # no token: only loopback pages may talk to it (DNS rebinding, CSRF)
        app.add_middleware(LoopbackOnly)
    else:  # the cookie reaches every port of the host: writes must come from this origin
        app.add_middleware(SameOriginWrites)

    def require_token(request: Request) -> None:
        if token is None:
            return
        if not token_matches(
            token,
            request.headers.get("authorization"),
            request.cookies.get(cookie_name(request.scope)),
        ):
            raise HTTPException(
                401,
                detail="missing or wrong token",
                headers={"WWW-Authenticate": "Bearer"},
            )

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        # a liveness probe (as 0.9.119's): says nothing but that the server answers
        return {"status": "ok"}

    add_error_handlers(app)
    app.include_router(router, prefix="/api", dependencies=[Depends(require_token)])
    app.include_router(blocking_router, prefix="/api", dependencies=[Depends(require_token)])
    if ui:
        _mount_page(app, token, title)
    return app


def _check_max_turns(max_turns: object) -> None:
    if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
        raise UserError(f"max_turns must be a whole number >= 1, got {max_turns!r}")


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


def _mount_page(app: FastAPI, token: str | None, title: str = "lovia") -> None:
    static = resources.files("lovia.web") / "static"
    index = str(static / "index.html")
    titled: str | None = None  # the page with another title, made once
    if title != "lovia":
        text = (static / "index.html").read_text(encoding="utf-8")
        titled = text.replace("<title>lovia</title>", f"<title>{html.escape(title)}</title>", 1)

    @app.get("/", include_in_schema=False)
    async def page(request: Request, token_param: str | None = Query(None, alias="token")) -> Any:
        if token is not None and token_param is not None:
            # trade the URL's token for a cookie, then drop it from the address bar
            if not token_matches(token, f"Bearer {token_param}", None):
                raise HTTPException(401, detail="wrong token")
            response = RedirectResponse("/", status_code=303)
            response.set_cookie(
                cookie_name(request.scope),
                token,
                httponly=True,
                samesite="strict",
                max_age=30 * 86400,
            )
            return response
        # the CSP is a second wall behind DOMPurify: no inline script can run at all
        headers = {"Cache-Control": "no-store", "Content-Security-Policy": PAGE_POLICY}
        if titled is not None:
            return HTMLResponse(titled, headers=headers)
        return FileResponse(index, headers=headers)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        # browsers ask for /favicon.ico whatever the page links: the same icon, as SVG
        return FileResponse(
            str(static / "favicon.svg"),
            media_type="image/svg+xml",
            headers={"Cache-Control": "max-age=86400"},
        )

    app.mount("/static", StaticFiles(directory=str(static)), name="static")
