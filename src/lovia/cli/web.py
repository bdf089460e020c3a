"""``lovia web``: serve the chat page and the HTTP API (needs the ``web`` extra)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UserError
from .common import add_agent_options, add_db_option, load_agents, open_stores, shown_db

__all__ = ["add_parser", "banner"]


def add_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "web",
        help="chat with an agent in the browser",
        description="Serve the chat page and its HTTP API (OpenAPI docs at /docs). Chats and "
        "runs are stored in --db, so they survive a restart; a run a restart interrupted is "
        "offered for resume on the page.",
    )
    add_agent_options(parser)
    add_db_option(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default: 8000)")
    parser.add_argument(
        "--token",
        help="require this token on every API call; generated and printed when --host is "
        "not a loopback address and no token is given",
    )
    parser.add_argument(
        "--lease-ttl",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long a run of a crashed server stays locked before it can be resumed "
        "(default: 30)",
    )
    parser.set_defaults(handler=run_web)


def run_web(args: argparse.Namespace) -> int:
    try:
        import uvicorn
    except ImportError as exc:
        raise UserError("lovia web needs uvicorn", hint="pip install 'lovia[web]'") from exc
    from ..web import create_app
    from ..web.auth import generate_token, is_loopback

    token: str | None = args.token
    if token is None and not is_loopback(args.host):
        token = generate_token()
    agents = load_agents(args.app, args.demo)
    session, checkpointer = open_stores(args.db, create=True)
    app = create_app(
        agents,
        session=session,
        checkpointer=checkpointer,
        token=token,
        lease_ttl=args.lease_ttl,
    )
    print("\n".join(banner(args.host, args.port, token, agents, args.db)), flush=True)
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=3,
    )
    return 0


def banner(host: str, port: int, token: str | None, agents: dict[str, Any], db: str) -> list[str]:
    """The lines ``lovia web`` prints before it starts: where to go and what it serves."""
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    lines = [f"lovia web: open {url}", f"lovia web: chats and runs are stored in {shown_db(db)}"]
    if not agents:
        from .common import NO_MODEL_HINT

        lines.append(f"lovia web: no model configured: {NO_MODEL_HINT}")
    else:
        from ..demo import DemoProvider

        for name, agent in agents.items():
            label = " (demo: offline, scripted)" if isinstance(agent.model, DemoProvider) else ""
            lines.append(f"lovia web: agent {name}{label}")
    if token:
        lines.append("lovia web: API calls need 'Authorization: Bearer <token>' (token above)")
    return lines
