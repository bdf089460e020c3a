"""SQLite stores: ``SQLiteSession`` and ``SQLiteCheckpointer`` (they may share one file)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

from ..errors import SchemaError, UserError
from . import _legacy
from ._schema import version_of
from ._sqlite_conn import BUSY_TIMEOUT_MS, check_header, connect_read_only, store_error
from ._sqlite_schema import CHECKPOINT_MIGRATIONS, SESSION_MIGRATIONS
from .sqlite_checkpoint import SQLiteCheckpointer
from .sqlite_lease import LEASE_SCHEMA_VERSION
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
            _refuse_newer(conn, name)
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


def _refuse_newer(conn: sqlite3.Connection, name: str) -> None:
    """``SchemaError`` when a newer lovia wrote the file: it is not "current" to this one,
    whose stores refuse to open it."""
    known = {
        "session": max(SESSION_MIGRATIONS),
        "checkpoint": max(CHECKPOINT_MIGRATIONS),
        "lease": LEASE_SCHEMA_VERSION,
    }
    rows = conn.execute("SELECT key, value FROM lovia_meta WHERE key LIKE 'schema:%'")
    for key, value in rows.fetchall():
        component = key.removeprefix("schema:")
        found = version_of((value,))
        if component in known and found > known[component]:
            raise SchemaError(
                f"{name!r} holds a {component} schema of version {found}; this lovia reads "
                f"up to version {known[component]}",
                hint="upgrade lovia to open this file; it was left unchanged",
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
