"""``lovia migrate PATH``: bring a database lovia 0.9.119 wrote to this lovia's format."""

from __future__ import annotations

import argparse
from typing import Any

from ..stores.open import is_postgres_url
from .common import counted, print_json, shown_db

__all__ = ["add_parser"]


def add_parser(sub: Any) -> None:
    help = "convert a SQLite file lovia 0.9.119 wrote (a checked copy is kept next to it)"
    parser: argparse.ArgumentParser = sub.add_parser(
        "migrate",
        help=help,
        description=help + ". Stores opened for writing do this by themselves; commands that "
        "only read never change a file.",
    )
    parser.add_argument("path", metavar="PATH", help="the SQLite file")
    parser.add_argument(
        "--check", action="store_true", help="only say what would be converted; write nothing"
    )
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")
    parser.set_defaults(handler=migrate)


def migrate(args: argparse.Namespace) -> int:
    if is_postgres_url(args.path):
        from ..errors import UserError

        raise UserError(
            f"{shown_db(args.path)!r} is a PostgreSQL database",
            hint="PostgreSQL tables are created and migrated when a store first uses them; "
            "'lovia migrate' converts SQLite files",
        )
    from ..stores.sqlite import migrate_sqlite_file

    report = migrate_sqlite_file(args.path, check=args.check)
    if args.json:
        print_json(
            {
                "path": report.path,
                "state": report.state,
                "sessions": report.sessions,
                "segments": report.segments,
                "runs": report.runs,
                "backup": report.backup,
            }
        )
        return 0
    counts = (
        f"{counted(report.sessions, 'session')} ({counted(report.segments, 'run')}) and "
        f"{counted(report.runs, 'checkpoint')}"
    )
    if report.state == "current":
        print(f"{report.path}: already in this lovia's format; nothing to do")
    elif report.state == "legacy":
        print(f"{report.path}: written by lovia 0.9.119; 'lovia migrate' would convert {counts}")
    else:
        print(f"{report.path}: converted {counts}; the original is kept as {report.backup}")
    return 0
