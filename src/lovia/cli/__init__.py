"""The ``lovia`` command: ``web``, ``chat``, ``sessions ...`` and ``runs ...``.

Every command has ``--help``; ``lovia --version`` prints the version. Store commands take
``--db PATH`` (default ``./.lovia/lovia.db``, the file ``lovia web`` and ``lovia chat`` use)
and ``--json`` for scripts.

Exit status, the same for every command: 0 done; 2 the request could not be done (a bad
argument, an unknown id, a model that cannot be used, a port already taken; the message and
what to do go to stderr; a program's own ``LoviaError`` subclass may set another
``exit_status``); 130 interrupted (Ctrl-C); 141 the reader of the output went away
(``lovia runs list | head -3``), quietly.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from .. import __version__
from ..errors import LoviaError
from .common import DEFAULT_DB

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_PIPE", "build_parser", "main", "version_line"]

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141  # 128 + SIGPIPE, as for other tools whose reader closed the pipe


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its commands' parsers are of this class too), whose usage errors end
    with a hint line, as lovia's other errors do: the usage, what was wrong, where to look."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(
            EXIT_ERROR,
            f"{self.prog}: error: {message}\n"
            f"{self.prog}: hint: '{self.prog} --help' shows what it takes\n",
        )


def version_line() -> str:
    """``lovia 0.9.120 (durable core; ...)``: the version, then what tells this lovia from the
    published 0.9.119 (which prints ``lovia 0.9.119`` alone) and where it is installed from,
    a checkout or an installed package. Scripts that read the version read the second word."""
    package = Path(__file__).resolve().parents[1]  # .../lovia
    root = package.parents[1]  # a checkout's root, for the src/ layout
    if package.parent.name == "src" and (root / "pyproject.toml").is_file():
        origin = f"from the checkout at {root}"
    else:
        origin = f"installed in {package.parent}"
    return f"lovia {__version__} (durable core; {origin})"


def build_parser() -> argparse.ArgumentParser:
    from . import chat, migrate, stores, web, worker

    parser = _Parser(
        prog="lovia",
        description="LLM agents with durable state: chat in the browser or the terminal, "
        "and inspect the stored sessions and runs.",
        epilog="to try it without an API key: 'lovia web --demo' (the chat page) or "
        "'lovia chat --demo' (the terminal); 'lovia COMMAND --help' for each command",
    )
    parser.add_argument("--version", action="version", version=version_line())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    web.add_parser(sub)
    chat.add_parser(sub)
    stores.add_sessions_parser(sub)
    stores.add_runs_parser(sub)
    migrate.add_parser(sub)
    worker.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lovia`` script; returns the exit status. A Ctrl-C at any point in
    it (the commands' modules still loading, the arguments being read, an error being
    printed) is exit status 130 without a traceback."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    early = _answer_without_a_command(parser, argv)
    if early is not None:
        return early
    args, extra = parser.parse_known_args(argv)
    if args.command is None:  # plain ``lovia``: the overview, as lovia 0.9.119 prints it
        parser.print_help()
        return 0
    if extra:
        _refuse_unknown(parser, args, extra)
    try:
        result = args.handler(args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        sys.stdout.flush()  # a closed pipe shows up here, not in the interpreter's last flush
        return int(result or 0)
    except LoviaError as exc:
        print(f"lovia: error: {_one_line(exc.message)}", file=sys.stderr)
        hint = _hint(exc)
        if hint:
            print(f"lovia: hint: {_one_line(hint)}", file=sys.stderr)
        status = exc.exit_status  # EXIT_ERROR unless the error's class or the error says
        return status if isinstance(status, int) else EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_PIPE


LOCKED_HINT = (
    "another program is writing to the file (a sqlite3 shell, a backup, or a program that "
    "opened its stores without wal=True); try again once it is done"
)


def _one_line(text: str) -> str:
    """An error as one line: a message that quotes a driver's (a PostgreSQL connection
    failure spans two lines and a tab) keeps its words, not its line breaks."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _hint(exc: LoviaError) -> str | None:
    """The error's hint, put for someone at the command line: a SQLite file that stayed
    locked is a program to wait for (the store's own hint, about ``wal=True``, is for whoever
    wrote that program; this command's stores already use it)."""
    cause = exc.__cause__
    driver_error = type(cause).__module__ == "sqlite3"  # (SQL drivers stay behind the stores)
    if (
        driver_error
        and type(cause).__name__ == "OperationalError"
        and any(word in str(cause).lower() for word in ("locked", "busy"))
    ):
        return LOCKED_HINT
    return exc.hint


def _answer_without_a_command(parser: argparse.ArgumentParser, argv: list[str]) -> int | None:
    """``--help``, ``--version`` and an unknown command are answered here with a returned
    status, as lovia 0.9.119's ``main`` returns them (a caller's ``main([...]) == 0`` keeps
    working); a command's own ``--help`` and errors exit as its parser does."""
    first = argv[0] if argv else ""
    if first in ("-h", "--help"):
        parser.print_help()
        return 0
    if first == "--version":
        print(version_line())
        return 0
    commands = [
        c for a in parser._actions if isinstance(a, argparse._SubParsersAction) for c in a.choices
    ]
    if not first or first in commands:
        return None
    if first.startswith("-"):  # lovia 0.9.119 took no other option before the command
        known = [o for a in parser._actions for o in a.option_strings]
        if first.partition("=")[0] in known:
            return None
    message = f"lovia: error: unknown command {first!r}"
    if close := difflib.get_close_matches(first, commands, n=1):
        message += f" (did you mean {close[0]}?)"
    print(f"{parser.format_usage()}{message}", file=sys.stderr)
    print(
        f"lovia: hint: the commands are {', '.join(commands)}; 'lovia --help' shows what each does",
        file=sys.stderr,
    )
    return EXIT_ERROR


def _refuse_unknown(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> None:
    """Arguments no parser took: refused by the command that was meant (its usage, not the
    top one), naming the option a typo most likely meant (``--dmeo``: ``--demo``)."""
    while True:  # down to the (sub)command the arguments chose: lovia runs prune ...
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, subs[0].dest, None) if subs else None
        if not subs or chosen not in subs[0].choices:
            break
        parser = subs[0].choices[chosen]
    message = f"unrecognized arguments: {' '.join(extra)}"
    options = [o for a in parser._actions for o in a.option_strings]
    for word in extra:
        flag = word.partition("=")[0]
        if flag.startswith("-") and (close := difflib.get_close_matches(flag, options, n=1)):
            message += f" (did you mean {close[0]}?)"
            break
    parser.error(message)


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
