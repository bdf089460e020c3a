"""The ``lovia`` command: ``web``, ``chat``, ``sessions ...`` and ``runs ...``.

Every command has ``--help``. Store commands take ``--db PATH`` (default
``./.lovia/lovia.db``, the file ``lovia web`` and ``lovia chat`` use) and ``--json`` for
scripts. Errors print what happened and what to do, and exit with status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

from ..errors import LoviaError
from .common import DEFAULT_DB

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    from . import chat, migrate, stores, web

    parser = argparse.ArgumentParser(
        prog="lovia",
        description="LLM agents with durable state: chat in the browser or the terminal, "
        "and inspect the stored sessions and runs.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    web.add_parser(sub)
    chat.add_parser(sub)
    stores.add_sessions_parser(sub)
    stores.add_runs_parser(sub)
    migrate.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lovia`` script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.handler(args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return int(result or 0)
    except LoviaError as exc:
        print(f"lovia: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"lovia: hint: {exc.hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


__all__ += ["DEFAULT_DB"]
