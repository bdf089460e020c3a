"""Run leases for ``SQLiteCheckpointer``: one host, many processes sharing one file.

The lease table is its own schema component (``schema:lease`` in ``lovia_meta``), created in
the first lease transaction on the checkpointer's own connection, so a checkpoint file that
never used leases is left exactly as it was. Times are the host's wall clock: every process
on one host shares it.
"""

from __future__ import annotations

import sqlite3
import time

from ..errors import SchemaError
from ._sqlite import SQLiteDatabase
from .lease import check_lease_args

__all__ = ["SQLiteLeases"]

LEASE_SCHEMA_VERSION = 1
_CREATE = (
    "CREATE TABLE IF NOT EXISTS lovia_run_leases ("
    "run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL)"
)


class SQLiteLeases:
    """The lease methods of ``SQLiteCheckpointer`` (a mixin over its ``_db``)."""

    _db: SQLiteDatabase

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Take the lease on ``run_id`` for ``ttl`` seconds: free, expired or already ours."""
        check_lease_args(run_id, owner, ttl)

        def take(conn: sqlite3.Connection) -> bool:
            _ensure_table(conn, self._db.path)
            now = time.time()
            cur = conn.execute(
                "INSERT INTO lovia_run_leases (run_id, owner, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, "
                "expires_at = excluded.expires_at "
                "WHERE lovia_run_leases.owner = excluded.owner "
                "OR lovia_run_leases.expires_at < ?",
                (run_id, owner, now + ttl, now),
            )
            return cur.rowcount > 0

        return await self._db.write(take)

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Extend our lease by ``ttl`` seconds; ``False`` when another owner has taken it."""
        check_lease_args(run_id, owner, ttl)

        def renew(conn: sqlite3.Connection) -> bool:
            _ensure_table(conn, self._db.path)
            cur = conn.execute(
                "UPDATE lovia_run_leases SET expires_at = ? WHERE run_id = ? AND owner = ?",
                (time.time() + ttl, run_id, owner),
            )
            return cur.rowcount > 0

        return await self._db.write(renew)

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op when ``owner`` no longer holds it)."""
        check_lease_args(run_id, owner, 1.0)

        def release(conn: sqlite3.Connection) -> None:
            _ensure_table(conn, self._db.path)
            conn.execute(
                "DELETE FROM lovia_run_leases WHERE run_id = ? AND owner = ?", (run_id, owner)
            )

        await self._db.write(release)

    async def lease_holder(self, run_id: str) -> str | None:
        """The owner of the unexpired lease on ``run_id``, or ``None``."""
        check_lease_args(run_id, "reader", 1.0)

        def holder(conn: sqlite3.Connection) -> str | None:
            _ensure_table(conn, self._db.path)
            row = conn.execute(
                "SELECT owner FROM lovia_run_leases WHERE run_id = ? AND expires_at >= ?",
                (run_id, time.time()),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._db.write(holder)


def _ensure_table(conn: sqlite3.Connection, path: str) -> None:
    """Create (version 1) or check the lease component; a newer one is refused untouched."""
    row = conn.execute("SELECT value FROM lovia_meta WHERE key = 'schema:lease'").fetchone()
    current = int(row[0]) if row else 0
    if current > LEASE_SCHEMA_VERSION:
        raise SchemaError(
            f"{path!r} holds a lease schema of version {current}; this lovia reads up to "
            f"version {LEASE_SCHEMA_VERSION}",
            hint="upgrade lovia to open this file; it was left unchanged",
        )
    if current == 0:
        conn.execute(_CREATE)
        conn.execute(
            "INSERT INTO lovia_meta (key, value) VALUES ('schema:lease', ?)",
            (str(LEASE_SCHEMA_VERSION),),
        )
