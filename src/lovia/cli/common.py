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
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..agent import Agent
from ..errors import UserError
from ..stores.capabilities import ListsRunHeads, ListsRuns, ReadsOldFiles, has_capability

if TYPE_CHECKING:
    from ..stores.checkpoint import RunSnapshot

__all__ = [
    "DEFAULT_DB",
    "NO_MODEL_HINT",
    "add_agent_options",
    "add_db_option",
    "agents_from",
    "check_stores",
    "counted",
    "db_stores",
    "import_app",
    "is_asgi_app",
    "load_agents",
    "no_model_hint",
    "open_stores",
    "print_json",
    "refuse_overwriting_a_database",
    "shown_db",
    "stored_run",
]

DEFAULT_DB = os.path.join(".lovia", "lovia.db")
NO_MODEL_HINT = (
    "set LOVIA_MODEL=openai:gpt-4.1 with OPENAI_API_KEY (any OpenAI-compatible server also "
    "reads OPENAI_BASE_URL), or LOVIA_MODEL=anthropic:claude-sonnet-4-5 with "
    "ANTHROPIC_API_KEY; or pass --demo for the offline demo agent"
)
DEFAULT_INSTRUCTIONS = "You are a helpful assistant. Answer clearly and briefly."


def no_model_hint() -> str:
    """What to set when no model is configured; it also names lovia 0.9.119's saved model
    settings when they are there, since this lovia does not read them."""
    found = [
        p
        for p in (os.path.join(".lovia", "config.json"), os.path.join("~", ".lovia", "config.json"))
        if os.path.isfile(os.path.expanduser(p))
    ]
    if not found:
        return NO_MODEL_HINT
    return (
        f"{NO_MODEL_HINT} (lovia 0.9.119's model settings in {found[0]} are not read here: "
        "copy its model and key into those variables)"
    )


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``1 run``, ``2 runs``, ``0 entries``: a count with its noun in the right number."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        default=os.environ.get("LOVIA_DB") or DEFAULT_DB,  # the file `lovia web` serves
        metavar="PATH",
        help="SQLite file (or postgresql:// URL) holding sessions and checkpoints "
        f"(env LOVIA_DB; default: {DEFAULT_DB})",
    )


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        help="use your own agent: an Agent, a {name: agent} mapping, or a function "
        "returning one (default: an assistant on LOVIA_MODEL)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="use the offline demo agent (scripted answers, no API key needed)",
    )


def load_agents(app: str | None, demo: bool) -> dict[str, Agent]:
    """The agents to serve: ``--app``, else ``--demo``, else ``LOVIA_MODEL``, else the model
    of 0.9.119's ``config.json`` (``./.lovia/``, then ``~/.lovia/``), else none."""
    if app:
        return _import_agents(app)
    if demo:
        from ..demo import demo_agent

        agent = demo_agent()
        return {agent.name: agent}
    model: Any = os.environ.get("LOVIA_MODEL")
    if not model:  # the model lovia 0.9.119's Settings -> Models saved
        from .model_config import configured_model

        model = configured_model()
    if model:
        return {"lovia": Agent("lovia", instructions=DEFAULT_INSTRUCTIONS, model=model)}
    return {}


def _import_agents(spec: str) -> dict[str, Agent]:
    return agents_from(import_app(spec), spec)


def agents_from(value: Any, spec: str) -> dict[str, Agent]:
    """The agents ``--app spec`` named (``value``, from ``import_app``): an Agent or a
    ``{name: agent}`` mapping; anything else is a ``UserError``."""
    if isinstance(value, Agent):
        return {value.name: value}
    if isinstance(value, Mapping) and value and all(isinstance(a, Agent) for a in value.values()):
        return {str(k): v for k, v in value.items()}
    raise UserError(
        f"--app {spec!r} is a {type(value).__name__}, not an Agent or a {{name: agent}} mapping",
        hint="point --app at the Agent itself (lovia web --app also takes an app built with "
        "create_app)",
    )


def import_app(spec: str) -> Any:
    """What ``--app MODULE:ATTR`` names: the attribute, or what it returns when it is a
    function (a factory) rather than an Agent or an ASGI app; not judged further."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"--app {spec!r} is not MODULE:ATTR", hint="e.g. --app myapp:agent")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like uvicorn: modules beside you are importable
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = exc.name or ""
        if missing and not module_name.startswith(missing):  # the module's own import failed
            raise UserError(
                f"importing {module_name!r} for --app failed: {exc}",
                hint=f"install {missing.split('.')[0]!r} in this environment",
            ) from exc
        raise UserError(
            f"cannot import {module_name!r} for --app: {exc}",
            hint="run lovia from the folder that holds the module, or set PYTHONPATH",
        ) from exc
    except Exception as exc:  # the module itself raised while it was imported
        raise UserError(
            f"importing {module_name!r} for --app raised {type(exc).__name__}: {exc}",
            hint=f"fix the module; python -c 'import {module_name}' shows the traceback",
        ) from exc
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            raise UserError(
                f"{module_name!r} has no attribute {attr!r}",
                hint=f"point --app at the Agent's name in {module_name!r}, e.g. "
                f"--app {module_name}:agent",
            )
        value = getattr(value, part)
    if callable(value) and not isinstance(value, Agent) and not is_asgi_app(value):
        value = value()
    return value


def is_asgi_app(value: Any) -> bool:
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


async def check_stores(db: str) -> None:
    """Open the stores once before serving or chatting, so a database this lovia cannot use
    (a newer schema, a foreign file, a folder, a server that refuses the login) is a clear
    error with a hint instead of a failed server start or a chat whose every message fails.
    Reading only; the command opens its own stores."""
    session, checkpointer = open_stores(db, create=True)
    try:
        await session.load("lovia-startup-check")
        # the heads only: a running run's entries need not be read to know the store works
        if has_capability(checkpointer, ListsRunHeads):
            await checkpointer.list_run_heads(statuses=("running",))
        elif has_capability(checkpointer, ListsRuns):
            await checkpointer.list_runs(statuses=("running",))
    finally:
        await session.close()
        await checkpointer.close()


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


_SQLITE_MAGIC = b"SQLite format 3\x00"


def refuse_overwriting_a_database(out: str, db: str) -> None:
    """``UserError`` when ``--out`` names the ``--db`` file (or its journal) or any other
    SQLite file: an export written there would replace the stored sessions and runs."""
    target = os.path.realpath(out)
    if "://" not in db:
        base = os.path.realpath(db)
        if target in {base + suffix for suffix in ("", "-wal", "-shm", "-journal")}:
            raise UserError(
                f"--out {out!r} is the database this command reads; writing there would "
                "replace every stored session and run",
                hint="pass --out a new file, e.g. --out export.json",
            )
    if not os.path.isfile(target):
        return  # missing (the usual case), or a pipe or terminal: reading one would block
    try:
        with open(target, "rb") as file:
            header = file.read(len(_SQLITE_MAGIC))
    except OSError:
        return  # unreadable: the write says what is wrong
    if header == _SQLITE_MAGIC:
        raise UserError(
            f"--out {out!r} is a SQLite database; an export will not overwrite it",
            hint="pass --out a new file, e.g. --out export.json",
        )


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
        legacy = legacy and any(
            has_capability(store, ReadsOldFiles) and store.needs_migration
            for store in (session, cp)
        )
        await session.close()
        await cp.close()
        if legacy:
            print(
                f"lovia: note: {shown_db(args.db)} was written by lovia 0.9.119 and was read as it "
                f"is; run 'lovia migrate {shown_db(args.db)}' to convert it",
                file=sys.stderr,
            )


async def stored_run(args: argparse.Namespace, *, note: bool = False) -> RunSnapshot:
    """The run ``args.run_id`` names, read without changing the file; ``UserError`` if none."""
    async with db_stores(args, read_only=True, note=note) as (_session, cp):
        snap: RunSnapshot | None = await cp.load(args.run_id)
    if snap is None:
        raise UserError(
            f"no run {args.run_id!r} in {shown_db(args.db)!r}", hint="see 'lovia runs list'"
        )
    return snap
