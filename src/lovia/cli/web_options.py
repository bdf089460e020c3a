"""``lovia web``'s options that lovia 0.9.119 users bring along: the same flags and ``LOVIA_*``
variables, resolved as 0.9.119 resolved them (flag, then variable, then default).

The default assistant's toolkit options (``--workspace``, ``--readonly`` / ``--trusted``,
``--memory-dir``, the ``--no-*`` flags) shape the agent ``lovia web`` builds itself; with
``--app`` or ``--demo`` there is no such agent, and a toolkit flag given is said to be ignored.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import UserError
from .common import DEFAULT_DB

__all__ = [
    "LOG_LEVELS",
    "add_v0_9_119_options",
    "configure_logging",
    "default_db",
    "non_negative_int",
    "port_number",
    "positive_int",
    "positive_seconds",
    "resolve",
]

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")  # 0.9.119's five
_TOOLKIT_FLAGS = {  # dest: flag, for the warning when --app or --demo has no default agent
    "workspace": "--workspace",
    "readonly": "--readonly",
    "trusted": "--trusted",
    "no_workspace": "--no-workspace",
    "memory_dir": "--memory-dir",
    "no_memory": "--no-memory",
    "no_subagents": "--no-subagents",
}
DEFAULT_MEMORY_DIR = os.path.join(".lovia", "memory")
_MODES = ("readonly", "coding", "trusted")
_OFF = ("0", "false", "no", "off")


def port_number(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def positive_int(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a whole number >= 1")
    return value


def non_negative_int(text: str) -> int:
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is not a whole number >= 0")
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _log_level(text: str) -> str:
    level = text.strip().lower()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a log level (choose {', '.join(LOG_LEVELS)})"
        )
    return level


def add_v0_9_119_options(parser: argparse.ArgumentParser) -> None:
    """The flags of 0.9.119's ``lovia web`` beyond ``--app/--db/--host/--port/--token``."""
    agent = parser.add_argument_group("agent (the default one, on LOVIA_MODEL)")
    agent.add_argument(
        "--instructions",
        metavar="TEXT",
        help="system prompt text, overriding --instructions-file",
    )
    agent.add_argument(
        "--instructions-file",
        metavar="FILE",
        help="system prompt file (env LOVIA_INSTRUCTIONS_FILE; default: ./AGENTS.md if present)",
    )
    agent.add_argument(
        "--max-tokens",
        type=positive_int,
        metavar="N",
        help="max output tokens per response (env LOVIA_MAX_TOKENS; default: the provider's)",
    )
    runs = parser.add_argument_group("runs (every served agent)")
    runs.add_argument(
        "--max-turns",
        type=positive_int,
        metavar="N",
        help="max model turns per message (env LOVIA_MAX_TURNS, default 50)",
    )
    runs.add_argument(
        "--max-retries",
        type=non_negative_int,
        metavar="N",
        help="retries after the first attempt on transient provider errors "
        "(env LOVIA_MAX_RETRIES, default: the agent's, 4; 0 disables)",
    )
    runs.add_argument(
        "--provider-timeout",
        type=positive_seconds,
        metavar="SECS",
        help="per-request model provider timeout (env LOVIA_PROVIDER_TIMEOUT, default 300)",
    )
    runs.add_argument(
        "--trust-env",
        action="store_true",
        help="honour HTTP(S)_PROXY / NO_PROXY for provider calls (env LOVIA_PROVIDER_TRUST_ENV)",
    )
    server = parser.add_argument_group("server")
    server.add_argument("--title", help="page title (env LOVIA_TITLE, default lovia)")
    server.add_argument(
        "--log-level",
        type=_log_level,
        metavar="LEVEL",
        help=f"{', '.join(LOG_LEVELS)} (env LOVIA_LOG_LEVEL, default info)",
    )
    server.add_argument(
        "--root-path",
        metavar="PATH",
        help="the path prefix a proxy serves the app under, e.g. /lovia (env LOVIA_ROOT_PATH)",
    )
    server.add_argument(
        "--check",
        action="store_true",
        help="print the model connection, probe its server, and exit (0 reachable, 2 not)",
    )
    kit = parser.add_argument_group(
        "the default assistant's toolkit (without --app or --demo)",
        "workspace file and shell tools, todos, long-term memory, skills (config.json's "
        "skills.dirs, else ./.agents/skills and ~/.agents/skills) and background subagents",
    )
    kit.add_argument(
        "--workspace",
        metavar="DIR",
        help="the folder its file and shell tools work in (env LOVIA_WORKSPACE, default .)",
    )
    kit.add_argument(
        "--readonly",
        action="store_true",
        help="reads only: no writes, no shell (env LOVIA_WORKSPACE_MODE=readonly)",
    )
    kit.add_argument(
        "--trusted",
        action="store_true",
        help="writes and shell without asking (env LOVIA_WORKSPACE_MODE=trusted; default: "
        "coding, where outside reads and shell commands ask)",
    )
    kit.add_argument("--no-workspace", action="store_true", help="no file or shell tools")
    kit.add_argument(
        "--memory-dir",
        metavar="DIR",
        help=f"where long-term memory lives (env LOVIA_MEMORY_DIR, default {DEFAULT_MEMORY_DIR})",
    )
    kit.add_argument("--no-memory", action="store_true", help="no long-term memory")
    kit.add_argument("--no-subagents", action="store_true", help="no background subagents")
    kit.add_argument(
        "--no-followups",
        action="store_true",
        help="no follow-up suggestions (env LOVIA_FOLLOWUPS=0)",
    )


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _env_value(name: str, parse: Any) -> Any:
    raw = _env(name)
    if raw is None:
        return None
    try:
        return parse(raw)
    except argparse.ArgumentTypeError as exc:
        raise UserError(
            f"{name}={raw!r}: {exc}", hint=f"fix or unset {name}, or pass the flag instead"
        ) from None


def resolve(args: argparse.Namespace) -> None:
    """Fill ``args`` from the ``LOVIA_*`` variables where no flag was given (flag, then
    variable, then default), and refuse what this server cannot do."""
    _refuse(args)
    _server(args)
    _toolkit(args)
    _runs(args)
    _instructions(args)


def _refuse(args: argparse.Namespace) -> None:
    root = args.root_path if args.root_path is not None else _env("LOVIA_ROOT_PATH")
    root = (root or "").strip()
    if any(c in root for c in "?#\\ "):
        raise UserError(
            f"--root-path / LOVIA_ROOT_PATH {root!r} is not a path prefix",
            hint="write it as the proxy serves the app, starting with '/': --root-path /lovia",
        )
    root = root.strip("/")  # 'lovia', '/lovia' and '/lovia/' name one prefix, as in 0.9.119
    args.root_path = f"/{root}" if root else ""


def _toolkit(args: argparse.Namespace) -> None:
    """The default assistant's toolkit: flag, then variable, then default."""
    if args.app or args.demo:
        given = [flag for dest, flag in _TOOLKIT_FLAGS.items() if getattr(args, dest)]
        if given:
            print(
                f"lovia web: {', '.join(given)} {'shape' if len(given) > 1 else 'shapes'} the "
                "default assistant; with "
                f"{'--app' if args.app else '--demo'} there is none: ignored",
                file=sys.stderr,
            )
    if args.readonly and args.trusted:
        raise UserError("--readonly and --trusted contradict", hint="pass one of them")
    mode = "readonly" if args.readonly else "trusted" if args.trusted else None
    mode = mode or (_env("LOVIA_WORKSPACE_MODE") or "coding").lower()
    if mode not in _MODES:
        raise UserError(
            f"LOVIA_WORKSPACE_MODE={mode!r} is not a workspace mode",
            hint=f"use one of {', '.join(_MODES)}, or unset it",
        )
    args.workspace_mode = mode
    args.workspace = args.workspace or _env("LOVIA_WORKSPACE") or "."
    args.memory_dir = args.memory_dir or _env("LOVIA_MEMORY_DIR") or DEFAULT_MEMORY_DIR
    if not args.no_followups and (_env("LOVIA_FOLLOWUPS") or "1").lower() in _OFF:
        args.no_followups = True
    if not (args.app or args.demo or args.no_workspace) and not Path(args.workspace).is_dir():
        raise UserError(
            f"--workspace / LOVIA_WORKSPACE {args.workspace!r} is not a folder",
            hint="pass a folder that exists, or --no-workspace",
        )


def _server(args: argparse.Namespace) -> None:
    args.host = args.host or _env("LOVIA_HOST") or "127.0.0.1"
    if args.port is None:
        env_port = _env_value("LOVIA_PORT", port_number)
        args.port = 8000 if env_port is None else env_port
    args.app = args.app or _env("LOVIA_APP")
    args.db_given = bool(args.db or _env("LOVIA_DB"))
    args.db = args.db or _env("LOVIA_DB")
    if args.token is not None:
        if not args.token.strip():
            raise UserError(
                "--token is empty", hint="pass a token, or leave --token out (loopback)"
            )
        args.token = args.token.strip()
    else:
        args.token = _env("LOVIA_WEB_TOKEN")
    args.title = args.title or _env("LOVIA_TITLE") or "lovia"
    if args.log_level is None:
        args.log_level = _env_value("LOVIA_LOG_LEVEL", _log_level) or "info"


def _runs(args: argparse.Namespace) -> None:
    if args.max_turns is None:
        args.max_turns = _env_value("LOVIA_MAX_TURNS", positive_int) or 50
    if args.max_tokens is None:
        args.max_tokens = _env_value("LOVIA_MAX_TOKENS", positive_int)
    if args.max_retries is None:
        args.max_retries = _env_value("LOVIA_MAX_RETRIES", non_negative_int)
    if args.provider_timeout is not None:  # the providers read it when they are built
        os.environ["LOVIA_PROVIDER_TIMEOUT"] = repr(args.provider_timeout)
    else:
        _env_value("LOVIA_PROVIDER_TIMEOUT", positive_seconds)  # a bad one: said now
    if args.trust_env:
        os.environ["LOVIA_PROVIDER_TRUST_ENV"] = "1"


def _instructions(args: argparse.Namespace) -> None:
    args.instructions_given = args.instructions is not None
    if args.instructions is None:
        file = args.instructions_file or _env("LOVIA_INSTRUCTIONS_FILE")
        if file is not None:
            path = Path(file)
            if not path.is_file():
                raise UserError(
                    f"no instructions file at {file!r}",
                    hint="pass an existing file to --instructions-file or LOVIA_INSTRUCTIONS_FILE",
                )
            args.instructions = path.read_text(encoding="utf-8")
        elif Path("AGENTS.md").is_file():
            args.instructions = Path("AGENTS.md").read_text(encoding="utf-8")


def default_db(agent_names: list[str]) -> tuple[str, str | None]:
    """The database when neither ``--db`` nor ``LOVIA_DB`` is given, and a note on it.

    This lovia's default is ``.lovia/lovia.db`` (as for 0.9.119's default agent). 0.9.119
    named an ``--app`` agent's file after the agent (``.lovia/<agent>.db``); when that file
    exists and ``.lovia/lovia.db`` does not, it is the one served, so the chats are there.
    """
    if agent_names and not Path(DEFAULT_DB).exists():
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in agent_names[0])
        legacy = os.path.join(".lovia", f"{safe}.db")
        if legacy != DEFAULT_DB and Path(legacy).is_file():
            return legacy, f"lovia 0.9.119's file for agent {agent_names[0]!r}; pass --db to choose"
    return DEFAULT_DB, None


def configure_logging(level: str) -> None:
    """``--log-level``: lovia's own log lines on stderr from ``level`` up."""
    logger = logging.getLogger("lovia")
    logger.setLevel(level.upper())
    if not any(getattr(h, "_lovia_web", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
        handler._lovia_web = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
