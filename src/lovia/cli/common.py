"""What the commands share: the database path, the stores on it, and choosing the agents."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..agent import Agent
from ..errors import UserError

__all__ = [
    "DEFAULT_DB",
    "NO_MODEL_HINT",
    "add_agent_options",
    "add_db_option",
    "db_stores",
    "load_agents",
    "open_stores",
    "print_json",
    "shown_db",
]

DEFAULT_DB = os.path.join(".lovia", "lovia.db")
NO_MODEL_HINT = (
    "set LOVIA_MODEL=openai:gpt-4.1 with OPENAI_API_KEY (any OpenAI-compatible server also "
    "reads OPENAI_BASE_URL), or LOVIA_MODEL=anthropic:claude-sonnet-4-5 with "
    "ANTHROPIC_API_KEY; or pass --demo for the offline demo agent"
)
DEFAULT_INSTRUCTIONS = "You are a helpful assistant. Answer clearly and briefly."


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=DEFAULT_DB,
        metavar="PATH",
        help=f"SQLite file holding sessions and checkpoints (default: {DEFAULT_DB})",
    )


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="serve your own agent: an Agent, a {name: agent} mapping, or a function "
        "returning one (default: an assistant on LOVIA_MODEL)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="use the offline demo agent (scripted answers, no API key needed)",
    )


def load_agents(app: str | None, demo: bool) -> dict[str, Agent]:
    """The agents to serve: ``--app``, else ``--demo``, else ``LOVIA_MODEL``, else none."""
    if app:
        return _import_agents(app)
    if demo:
        from ..demo import demo_agent

        agent = demo_agent()
        return {agent.name: agent}
    model = os.environ.get("LOVIA_MODEL")
    if model:
        return {"assistant": Agent("assistant", instructions=DEFAULT_INSTRUCTIONS, model=model)}
    return {}


def _import_agents(spec: str) -> dict[str, Agent]:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"--app {spec!r} is not MODULE:ATTR", hint="e.g. --app myapp:agent")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like uvicorn: modules beside you are importable
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserError(
            f"cannot import {module_name!r} for --app: {exc}",
            hint="run lovia from the folder that holds the module, or set PYTHONPATH",
        ) from exc
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise UserError(f"{module_name!r} has no attribute {attr!r}")
        value = getattr(value, part)
    if callable(value) and not isinstance(value, Agent) and not _is_asgi_app(value):
        value = value()
    if isinstance(value, Agent):
        return {value.name: value}
    if isinstance(value, Mapping) and value and all(isinstance(a, Agent) for a in value.values()):
        return {str(k): v for k, v in value.items()}
    raise UserError(
        f"--app {spec!r} is a {type(value).__name__}, not an Agent or a {{name: agent}} mapping",
        hint="point --app at the Agent itself; an app you built (as for lovia 0.9.119's "
        "create_app) runs with uvicorn MODULE:ATTR instead",
    )


def _is_asgi_app(value: Any) -> bool:
    """An ASGI app (a FastAPI or Starlette instance, as 0.9.119's ``--app`` took): callable,
    but not a factory to call without arguments."""
    if inspect.isroutine(value) or inspect.isclass(value):
        return False
    call = next(
        (c.__dict__["__call__"] for c in type(value).__mro__ if "__call__" in c.__dict__), None
    )
    return inspect.iscoroutinefunction(call)


def open_stores(db: str, *, create: bool, read_only: bool = False) -> tuple[Any, Any]:
    """The session store and checkpointer behind ``--db``: a SQLite path (both stores in one
    file, ``wal=True``) or a ``postgresql://`` URL. ``read_only=True`` for commands
    that only look: they never create, convert or migrate anything."""
    from ..stores.open import open_stores as open_db

    return open_db(db, create=create, read_only=read_only)


def shown_db(db: str) -> str:
    """``--db`` as it may be printed or logged: a URL's password (in the address or in a
    ``password=`` parameter) becomes ``***``; a file path is shown as given."""
    if "://" not in db:
        return db
    try:
        parts = urlsplit(db)
        password = parts.password
    except ValueError:  # not a URL we can take apart: show nothing that could be secret
        return db.partition("://")[0] + "://***"
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        name = user.partition(":")[0]
        netloc = f"{name}:***@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(k.lower() == "password" for k, _ in pairs):
            masked = [(k, "***" if k.lower() == "password" else v) for k, v in pairs]
            query = urlencode(masked, safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


@asynccontextmanager
async def db_stores(
    args: argparse.Namespace, *, read_only: bool = False, note: bool = True
) -> AsyncIterator[tuple[Any, Any]]:
    """The session store and checkpointer behind ``--db``, both closed on the way out (an
    error too). ``read_only``: a command that only looks (nothing is created, converted or
    migrated); it says so afterwards when the file still needs migrating, unless ``note``
    is off."""
    session, cp = open_stores(args.db, create=False, read_only=read_only)
    legacy = read_only and note
    try:
        yield session, cp
    finally:
        legacy = legacy and (
            getattr(session, "needs_migration", False) or getattr(cp, "needs_migration", False)
        )
        await session.close()
        await cp.close()
        if legacy:
            print(
                f"lovia: note: {shown_db(args.db)} was written by lovia 0.9.119 and was read as it "
                f"is; run 'lovia migrate {shown_db(args.db)}' to convert it",
                file=sys.stderr,
            )
