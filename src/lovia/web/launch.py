"""``serve``: run the app under uvicorn (blocking)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from ..agent import Agent
from ..errors import UserError
from .auth import generate_token, is_loopback
from .serving import HEADER_TIMEOUT, header_timeout_protocol

__all__ = ["serve"]


def _ours(app: Any) -> bool:
    from .deps import RouterDeps

    return isinstance(getattr(getattr(app, "state", None), "deps", None), RouterDeps)


def _link(host: str, port: int, token: str, root_path: str) -> str:
    if root_path:  # only the proxy that strips the prefix reaches the page
        return f"UI: <your proxy>{root_path.rstrip('/')}/?token={token}"
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"UI: http://{shown}:{port}/?token={token}"


def serve(
    target: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    **uvicorn_kwargs: Any,
) -> None:
    """Serve ``target`` (an app from ``create_app``, or an agent or ``{name: agent}`` to
    serve with its defaults) on ``host:port``; other keywords go to ``uvicorn.run``
    (``log_level``, ``root_path``, ``ssl_certfile``...).

    Off loopback it is never served without a guard: an agent gets a generated token,
    printed once with the page's ``/?token=...`` link; an app built by ``create_app``
    without ``token`` and ``auth`` is refused. An app of your own is run as it is."""
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UserError("serve needs uvicorn", hint="pip install 'lovia[web]'") from exc
    from .app import create_app

    root_path = str(uvicorn_kwargs.get("root_path") or "")
    if isinstance(target, (Agent, Mapping)):
        wrong = sorted(k for k in uvicorn_kwargs if k in inspect.signature(create_app).parameters)
        if wrong:
            raise TypeError(
                f"serve() passes its keywords to uvicorn; these are create_app() options "
                f"{wrong}: build the app with create_app(agent, ...) and serve that"
            )
        token = None if is_loopback(host) else generate_token()
        target = create_app(target, token=token)
        if token is not None:
            print(f"lovia: web API token (generated): {token}", flush=True)
            print(f"lovia: {_link(host, port, token, root_path)}", flush=True)
    elif _ours(target):
        state = target.state
        if not is_loopback(host) and not state.guarded:
            raise UserError(
                f"refusing to serve an app built without authentication on {host}",
                hint="build it with create_app(..., token=...) or create_app(..., auth=...), "
                "or serve it on 127.0.0.1",
            )
        if state.token is not None:
            print(f"lovia: {_link(host, port, state.token, root_path)}", flush=True)
    uvicorn_kwargs.setdefault("http", header_timeout_protocol(HEADER_TIMEOUT))
    uvicorn.run(target, host=host, port=port, **uvicorn_kwargs)
