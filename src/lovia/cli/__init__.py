"""The ``lovia`` command: ``web``, ``chat``, ``sessions ...`` and ``runs ...``.

Every command has ``--help``; ``lovia --version`` prints the version. Store commands take
``--db PATH`` (default ``./.lovia/lovia.db``, the file ``lovia web`` and ``lovia chat`` use)
and ``--json`` for scripts.

Exit status, the same for every command: 0 done; 2 the request could not be done (a bad
argument, an unknown id, a model that cannot be used, a port already taken; the message and
what to do go to stderr); 130 interrupted (Ctrl-C); 141 the reader of the output went away
(``lovia runs list | head -3``), quietly.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import LoviaError
from .common import DEFAULT_DB

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_PIPE", "build_parser", "main"]

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141  # 128 + SIGPIPE, as for other tools whose reader closed the pipe


def build_parser() -> argparse.ArgumentParser:
    from . import chat, migrate, stores, web

    parser = argparse.ArgumentParser(
        prog="lovia",
        description="LLM agents with durable state: chat in the browser or the terminal, "
        "and inspect the stored sessions and runs.",
    )
    parser.add_argument("--version", action="version", version=f"lovia {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    web.add_parser(sub)
    chat.add_parser(sub)
    stores.add_sessions_parser(sub)
    stores.add_runs_parser(sub)
    migrate.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lovia`` script; returns the exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command is None:  # plain ``lovia``: the overview, as lovia 0.9.119 prints it
        parser.print_help()
        return 0
    if extra:  # said by the command that was given: "lovia web: error: ..."
        _command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        result = args.handler(args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        sys.stdout.flush()  # a closed pipe shows up here, not in the interpreter's last flush
        return int(result or 0)
    except LoviaError as exc:
        print(f"lovia: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"lovia: hint: {exc.hint}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE


def _command_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            found: argparse.ArgumentParser = action.choices[name]
            return found
    return parser


def _silence_stdout() -> None:
    """The reader of stdout went away: point stdout at /dev/null so the interpreter's final
    flush does not print a second BrokenPipeError on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file: nothing to flush to anyway
        pass


__all__ += ["DEFAULT_DB"]
