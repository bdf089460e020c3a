"""SQLite stores: ``SQLiteSession`` and ``SQLiteCheckpointer`` (they may share one file)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

from ..errors import SchemaError, UserError
from . import _legacy
from ._sqlite_conn import BUSY_TIMEOUT_MS, check_header, connect_read_only, store_error
from .sqlite_checkpoint import SQLiteCheckpointer
from .sqlite_session import SQLiteSession

__all__ = ["MigrationReport", "SQLiteCheckpointer", "SQLiteSession", "migrate_sqlite_file"]


def migrate_sqlite_file(path: str | os.PathLike[str], *, check: bool = False) -> MigrationReport:
    """Bring the SQLite file at ``path`` to this lovia's format; ``check=True`` only tells.

    A file lovia 0.9.119 wrote is converted in one transaction after a copy of it is written
    next to it (``PATH.0.9.119.bak``), then vacuumed; ``check=True`` decodes every row and
    writes nothing.
    Migrating a file twice changes nothing the second time.
    """
    name = os.fspath(path)
    if not os.path.exists(name):
        raise UserError(f"no database at {name!r}", hint="pass the path of an existing file")
    check_header(name)
    conn = connect_read_only(name) if check else sqlite3.connect(name, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        tables = _legacy.tables_of(conn)
        if not _legacy.is_legacy(tables):
            if "lovia_meta" not in tables:
                raise SchemaError(
                    f"{name!r} is not a lovia database",
                    hint="point it at a file lovia (or lovia 0.9.119) wrote; it was left as it was",
                )
            return MigrationReport(name, "current", 0, 0, 0, None)
        report = _legacy.check(conn) if check else _legacy.migrate(conn, name)
        if report is not None and not check:
            _shrink(conn)
    except sqlite3.DatabaseError as exc:
        raise store_error(name, exc) from exc
    finally:
        conn.close()
    if report is None:  # another process migrated it meanwhile
        return MigrationReport(name, "current", 0, 0, 0, None)
    state = "legacy" if check else "migrated"
    return MigrationReport(
        name, state, report.sessions, report.segments, report.runs, report.backup
    )


def _shrink(conn: sqlite3.Connection) -> None:
    """Give back the pages the dropped 0.9.119 tables held; skipped while others use it."""
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError:
        pass  # busy: the pages stay free and are reused by later writes


@dataclass(frozen=True)
class MigrationReport:
    """What ``migrate_sqlite_file`` found: ``state`` is ``"current"`` (nothing to do),
    ``"legacy"`` (a 0.9.119 file, with ``check=True``) or ``"migrated"``."""

    path: str
    state: str
    sessions: int
    segments: int
    runs: int
    backup: str | None
