"""``lovia web``: serve the chat page and the HTTP API (needs the ``web`` extra)."""

from __future__ import annotations

import argparse
import asyncio
import errno
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

from .. import __version__
from ..errors import UserError
from .common import (
    DEFAULT_DB,
    add_agent_options,
    agents_from,
    check_stores,
    import_app,
    is_asgi_app,
    load_agents,
    open_stores,
    shown_db,
)
from .web_check import check_agents, tune_agents
from .web_init_ui import add_init_ui
from .web_options import (
    add_v0_9_119_options,
    configure_logging,
    default_db,
    port_number,
    positive_seconds,
    resolve,
)
from .web_toolkit import equip

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
    parser.add_argument(
        "--db",
        metavar="PATH",
        help=f"SQLite file (or postgresql:// URL) holding sessions and checkpoints (env "
        f"LOVIA_DB; default: {DEFAULT_DB}, or lovia 0.9.119's .lovia/<agent>.db for --app "
        "when only that one exists)",
    )
    parser.add_argument("--host", help="address to bind (env LOVIA_HOST, default: 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=port_number,
        help="port to bind, 0 for any free one (env LOVIA_PORT, default: 8000)",
    )
    parser.add_argument(
        "--token",
        help="require this token on every API call; generated and printed when --host is "
        "not a loopback address and no token is given (env LOVIA_WEB_TOKEN, preferred: a "
        "flag is visible in the process list)",
    )
    parser.add_argument(
        "--lease-ttl",
        type=positive_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long a run of a crashed server stays locked before it can be resumed "
        "(default: 30)",
    )
    parser.add_argument(
        "--request-timeout",
        type=positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long a client may take to send a request's headers, and then its body, "
        "before it gets 408 and its connection is closed (default: 10)",
    )
    parser.add_argument(
        "--workers",
        action="store_true",
        help="hand each chat's runs to `lovia worker` processes on the same postgresql:// "
        "--db (start them with the same --app) and follow them from the database",
    )
    parser.add_argument("--version", action="version", version=f"lovia {__version__}")
    add_v0_9_119_options(parser)
    parser.set_defaults(handler=run_web)
    add_init_ui(parser)


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening, as uvicorn would open it; a
    ``UserError`` that names the fix when the port is taken or the address is not ours."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(
            f"cannot bind to --host {host!r}: {exc.strerror}",
            hint="pass an address of this machine, e.g. --host 127.0.0.1 or --host 0.0.0.0",
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(
                f"port {port} on {host} is already in use (another lovia web, or another "
                "program, is listening there)",
                hint=f"stop that program, or pick another port: lovia web --port {port + 1} "
                f"(or make web PORT={port + 1})",
            ) from None
        raise UserError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="ports below 1024 need root; pick another with --port, or another --host",
        ) from None
    sock.setblocking(False)
    return sock


def run_web(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401 - said before anything is imported or bound
    except ImportError as exc:
        raise UserError("lovia web needs uvicorn", hint="pip install 'lovia[web]'") from exc
    from ..demo import DemoProvider
    from ..testing import ScriptedProvider
    from ..web import create_app
    from ..web.auth import generate_token, is_loopback

    resolve(args)  # flags, then LOVIA_* variables, then defaults (as 0.9.119)
    configure_logging(args.log_level)
    built = import_app(args.app) if args.app else None
    if built is not None and is_asgi_app(built):
        return serve_built(built, args)

    def loaded() -> dict[str, Any]:  # a factory named by --app is called once
        found = agents_from(built, args.app) if args.app else load_agents(None, args.demo)
        return tune_agents(found, args)

    if args.check:
        return check_agents(loaded())
    token: str | None = args.token
    if token is None and not is_loopback(args.host):
        token = generate_token()
    # the port first: a taken one is told before any file is created or anything printed
    sock = listen(args.host, args.port)
    try:
        port = int(sock.getsockname()[1])
        agents = loaded()
        note = None
        if args.db is None:
            args.db, note = default_db(list(agents) if args.app else [])
        asyncio.run(check_stores(args.db))  # a store it cannot use: two lines, exit 2
        store = chat_store(args.db)
        questions = None
        if not (args.app or args.demo):  # the assistant lovia web builds gets its toolkit
            from ..tools import HumanChannel

            questions = HumanChannel()  # its ask_human, answered on the page
            agents = {
                name: equip(agent, args, store=store, questions=questions)
                for name, agent in agents.items()
            }
        queue = work_queue(agents, args.db) if args.workers else None
        scripted = any(
            isinstance(a.model, (DemoProvider, ScriptedProvider)) for a in agents.values()
        )
        app = create_app(
            agents,
            config_runtime=settings(args, agents, store, questions),
            store=store,
            question_channel=questions,
            # a scripted model's answers are the conversation's: none goes to naming chats
            titles=not scripted,
            token=token,
            lease_ttl=args.lease_ttl,
            body_timeout=args.request_timeout,
            max_turns=args.max_turns,
            title=args.title,
            # the CLI opts in on its own behalf, as 0.9.119's did, for --app agents too
            followups=not (args.no_followups or args.demo or scripted),
            queue=queue,
        )
        lines = banner(args.host, port, token, agents, args.db)
        if note:
            lines.insert(2, f"lovia web: {shown_db(args.db)} is {note}")
        run_server(app, args, sock, lines)
    finally:
        sock.close()
    return 0


def run_server(app: Any, args: argparse.Namespace, sock: socket.socket, lines: list[str]) -> None:
    """Print ``lines`` (the banner) and serve ``app`` on ``sock`` until Ctrl-C."""
    import uvicorn

    from ..web.serving import header_timeout_protocol

    config = uvicorn.Config(
        app,
        host=args.host,
        port=int(sock.getsockname()[1]),
        log_level="warning" if args.log_level in ("debug", "info") else args.log_level,
        timeout_graceful_shutdown=3,
        http=header_timeout_protocol(args.request_timeout),
        root_path=args.root_path,
    )
    server = uvicorn.Server(config)
    # From the banner on, Ctrl-C asks the server to stop: a KeyboardInterrupt raised while
    # uvicorn is still importing can land in a callback that Python ignores, and the server
    # would then start and never stop. The server checks the flag once it has started.
    previous = signal.signal(signal.SIGINT, server.handle_exit)
    print("\n".join(lines), flush=True)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown: done all the same
        pass
    finally:
        signal.signal(signal.SIGINT, previous)


# what lovia web passes to create_app, and how to tell it was given
_BUILD_OPTIONS: dict[str, Callable[[argparse.Namespace], bool]] = {
    "--token": lambda a: a.token is not None,
    "--db": lambda a: a.db_given,
    "--title": lambda a: a.title != "lovia",
    "--max-turns": lambda a: a.max_turns != 50,
    "--max-retries": lambda a: a.max_retries is not None,
    "--no-followups": lambda a: a.no_followups,
    "--workers": lambda a: a.workers,
}


def serve_built(app: Any, args: argparse.Namespace) -> int:
    """``--app`` naming an app (``create_app(...)``, or any ASGI app): served as it was
    built, with its own auth, stores and page; this command binds, logs and prints the
    banner. Off loopback an app from ``create_app`` built without ``token`` and ``auth`` is
    refused, as ``serve()`` refuses it."""
    from ..web.auth import is_loopback

    deps = getattr(getattr(app, "state", None), "deps", None)
    agents: dict[str, Any] = dict(getattr(deps, "agents", None) or {})
    if args.check:
        if not agents:
            raise UserError(
                f"--app {args.app!r} is an app of your own: --check finds no agents in it",
                hint="point --check at the agents: --app MODULE:AGENT",
            )
        return check_agents(agents)
    ignored = [flag for flag, given in _BUILD_OPTIONS.items() if given(args)]
    if ignored:
        print(
            f"lovia web: --app {args.app} is a built app; ignoring {', '.join(ignored)} "
            "(pass them to create_app instead)",
            file=sys.stderr,
        )
    state = getattr(app, "state", None)
    token = getattr(state, "token", None) if deps is not None else None
    if deps is not None and not is_loopback(args.host) and not getattr(state, "guarded", False):
        raise UserError(
            f"refusing to serve an app built without authentication on {args.host}",
            hint="build it with create_app(..., token=...) or create_app(..., auth=...), "
            "or serve it on --host 127.0.0.1",
        )
    sock = listen(args.host, args.port)
    try:
        port = int(sock.getsockname()[1])
        shown = f"[{args.host}]" if ":" in args.host else args.host
        url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
        lines = [f"lovia web: open {url}", f"lovia web: serving the app {args.app} as built"]
        lines += [f"lovia web: agent {name}" for name in agents]
        run_server(app, args, sock, lines)
    finally:
        sock.close()
    return 0


def settings(
    args: argparse.Namespace, agents: dict[str, Any], store: Any = None, questions: Any = None
) -> Any:
    """The ``config.json`` the Settings routes edit, when the agent is the one built from it
    (no ``--app``, ``--demo`` or ``LOVIA_MODEL``); each change rebuilds that agent."""
    import os

    from ..agent import Agent
    from ..web.api_config import ConfigFile
    from .common import DEFAULT_INSTRUCTIONS
    from .model_config import model_of, settings_path

    if args.app or args.demo or os.environ.get("LOVIA_MODEL"):
        return None
    path = settings_path()
    name = next(iter(agents), "lovia")

    def rebuild(doc: dict[str, Any]) -> Any:
        model = model_of(doc, path)
        if model is None:
            return None
        agent = Agent(name, instructions=DEFAULT_INSTRUCTIONS, model=model)
        tuned = tune_agents({name: agent}, args)[name]
        return equip(tuned, args, doc, store=store, questions=questions)

    return ConfigFile(path=path, agent_name=name, rebuild=rebuild)


def work_queue(agents: dict[str, Any], db: str) -> Any:
    """The ``AgentQueue`` ``lovia web --workers`` hands its runs to (``--db`` must be
    PostgreSQL: the workers share it)."""
    from ..stores.open import is_postgres_url

    if not is_postgres_url(db):
        raise UserError(
            "--workers needs a postgresql:// --db (the workers read their runs from it)",
            hint="pass --db postgresql://..., or serve without --workers (runs in this process)",
        )
    if not agents:
        raise UserError("--workers needs an agent", hint="pass --app MODULE:ATTR")
    from ..workers import AgentQueue

    return AgentQueue(agents, db)


def chat_store(db: str) -> Any:
    """The ``ChatStore`` behind ``--db``: one SQLite file holding everything, or one
    PostgreSQL database (the stores and the chat tables: titles, pins, run records,
    schedules), which every web server on it shares."""
    from ..stores.open import is_postgres_url
    from ..web.store import ChatStore

    if not is_postgres_url(db):
        return ChatStore.sqlite(db)
    session, checkpointer = open_stores(db, create=True)
    return ChatStore(session, checkpointer=checkpointer, meta_path=db)


def banner(host: str, port: int, token: str | None, agents: dict[str, Any], db: str) -> list[str]:
    """The lines ``lovia web`` prints before it starts: where to go and what it serves."""
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    lines = [f"lovia web: open {url}", f"lovia web: chats and runs are stored in {shown_db(db)}"]
    if not agents:
        from .common import no_model_hint

        lines.append(f"lovia web: no model configured: {no_model_hint()}")
    else:
        from ..chats.setup import model_problem
        from ..demo import DemoProvider

        for name, agent in agents.items():
            label = " (demo: offline, scripted)" if isinstance(agent.model, DemoProvider) else ""
            lines.append(f"lovia web: agent {name}{label}")
            problem = model_problem(agent)  # the page says so too, and refuses to send
            if problem is not None:
                lines.append(f"lovia web: agent {name} cannot answer: {problem.message}")
                if problem.hint:
                    lines.append(f"lovia web: hint: {problem.hint}")
    if token:
        lines.append("lovia web: API calls need 'Authorization: Bearer <token>' (token above)")
    return lines
