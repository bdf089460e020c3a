"""``build_api_router(deps)``: the whole JSON + SSE API as one router, no page.

Mount it into an app of your own (your middleware, your auth, your lifespan)::

    deps = RouterDeps(agents={"bot": agent}, store=ChatStore.in_memory())
    app = FastAPI(lifespan=deps.lifespan)
    app.include_router(build_api_router(deps), dependencies=[Depends(my_auth)])

It has no authentication of its own and no ``/healthz``: those are the app's.
"""

from __future__ import annotations

from fastapi import APIRouter

from .api_chat import chat_routes
from .api_config import config_routes
from .api_forks import fork_routes
from .api_memory import memory_routes
from .api_schedules import schedule_routes
from .api_server import server_routes
from .api_sessions import session_routes
from .api_workspace import workspace_routes
from .config_probe import probe_routes
from .deps import RouterDeps

__all__ = ["build_api_router"]


def build_api_router(deps: RouterDeps) -> APIRouter:
    """The API's routes, all under ``/api``, bound to ``deps``."""
    router = APIRouter()
    router.include_router(server_routes(deps))
    router.include_router(chat_routes(deps))
    router.include_router(session_routes(deps))
    router.include_router(fork_routes(deps))
    router.include_router(workspace_routes(deps))
    router.include_router(schedule_routes(deps))
    router.include_router(memory_routes(deps))
    router.include_router(config_routes(deps))
    router.include_router(probe_routes(deps))
    return router
