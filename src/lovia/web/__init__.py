"""``lovia.web``: serve lovia agents over HTTP + SSE, with a chat page (the ``web`` extra).

::

    from lovia.web import serve, create_app

    serve(agent)                                   # 127.0.0.1:8000
    app = create_app(agents, db_path="chats.db")   # every option is here
    app = create_app(agent, ui=False)              # the API alone

Bring your own app: ``build_api_router(RouterDeps(agents=..., store=ChatStore...))``.
Nothing in ``lovia`` imports this package, and the names below are loaded when first used,
so ``lovia chat`` works without FastAPI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app
    from .auth import generate_token, is_loopback, token_dependency
    from .charts import show_chart, validate_chart_option
    from .components import put_ui_data, ui_result
    from .deps import RouterDeps
    from .followups import FollowupFn, FollowupRequest, generate_followups
    from .html import show_html
    from .launch import serve
    from .questions import QuestionRegistry
    from .router import build_api_router
    from .run_deps import RunDepsFn, RunTrigger
    from .scheduling import Scheduling
    from .store import ChatMeta, ChatStore
    from .subagents import subagent_deliver, wire_subagents
    from .tables import show_table
    from .ui import SURFACE_NOTE, ChatUI

_WHERE = {
    "ChatMeta": "store",
    "ChatStore": "store",
    "ChatUI": "ui",
    "FollowupFn": "followups",
    "FollowupRequest": "followups",
    "QuestionRegistry": "questions",
    "RouterDeps": "deps",
    "RunDepsFn": "run_deps",
    "RunTrigger": "run_deps",
    "SURFACE_NOTE": "ui",
    "Scheduling": "scheduling",
    "build_api_router": "router",
    "create_app": "app",
    "generate_followups": "followups",
    "generate_token": "auth",
    "is_loopback": "auth",
    "put_ui_data": "components",
    "serve": "launch",
    "show_chart": "charts",
    "show_html": "html",
    "show_table": "tables",
    "subagent_deliver": "subagents",
    "token_dependency": "auth",
    "ui_result": "components",
    "validate_chart_option": "charts",
    "wire_subagents": "subagents",
}

__all__ = [
    "SURFACE_NOTE",
    "ChatMeta",
    "ChatStore",
    "ChatUI",
    "FollowupFn",
    "FollowupRequest",
    "QuestionRegistry",
    "RouterDeps",
    "RunDepsFn",
    "RunTrigger",
    "Scheduling",
    "build_api_router",
    "create_app",
    "generate_followups",
    "generate_token",
    "is_loopback",
    "put_ui_data",
    "serve",
    "show_chart",
    "show_html",
    "show_table",
    "subagent_deliver",
    "token_dependency",
    "ui_result",
    "validate_chart_option",
    "wire_subagents",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'lovia.web' has no attribute {name!r}")
    try:
        import fastapi  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from ..errors import UserError

        raise UserError(
            "lovia.web needs FastAPI and uvicorn", hint="pip install 'lovia[web]'"
        ) from exc
    value = getattr(import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
