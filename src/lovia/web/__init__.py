"""``lovia.web``: the chat server behind ``lovia web`` (needs the ``web`` extra).

``create_app(agents, *, session=None, checkpointer=None, ui=True, token=None)`` returns a
FastAPI app: a JSON + SSE API under ``/api`` (OpenAPI docs at ``/docs``) and, with ``ui``,
the chat page at ``/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # FastAPI is imported only when the app is asked for, so the supervisor and the chat
    # book (used by ``lovia chat``) work without the web extra
    if name != "create_app":
        raise AttributeError(f"module 'lovia.web' has no attribute {name!r}")
    try:
        import fastapi  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from ..errors import UserError

        raise UserError(
            "lovia.web needs FastAPI and uvicorn", hint="pip install 'lovia[web]'"
        ) from exc
    from .app import create_app

    return create_app
