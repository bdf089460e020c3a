"""Run leases for ``SQLiteCheckpointer``: one host, many processes sharing one file.

The lease table is its own schema component (``schema:lease`` in ``lovia_meta``), created in
the first lease transaction on the checkpointer's own connection, so a checkpoint file that
never used leases is left exactly as it was. Times are the host's boot clock
(``lease.lease_clock``): every process on one host shares it, and a step of the wall clock
(an NTP correction, a VM resume) cannot make a live lease look expired.
"""

from __future__ import annotations

import sqlite3

from ..errors import SchemaError
from ._sqlite import SQLiteDatabase
from .lease import LeaseClock, check_fence, check_lease_args, held_lease, hold_lease

__all__ = ["SQLiteLeases", "check_lease_fence", "has_leases"]

LEASE_SCHEMA_VERSION = 2
_CREATE = (
    "CREATE TABLE IF NOT EXISTS lovia_run_leases ("
    "run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL)"
)
# version 2: the fencing token, and expiry on the boot clock (``boot`` names the boot the
# time belongs to; a version 1 row, stamped by the wall clock, counts as expired)
_UPGRADE = (
    "ALTER TABLE lovia_run_leases ADD COLUMN token INTEGER NOT NULL DEFAULT 1",
    "ALTER TABLE lovia_run_leases ADD COLUMN boot TEXT NOT NULL DEFAULT '-'",
)
_RELEASED = -1.0  # below every reading of the boot clock: expired, and not renewable


class SQLiteLeases:
    """The lease methods of ``SQLiteCheckpointer`` (a mixin over its ``_db``)."""

    _db: SQLiteDatabase
    _clock: LeaseClock

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Take the lease on ``run_id`` for ``ttl`` seconds: free, expired or already ours."""
        check_lease_args(run_id, owner, ttl)

        def take(conn: sqlite3.Connection) -> int | None:
            _ensure_table(conn, self._db.path)
            boot, now = self._clock.host()
            row = conn.execute(
                "SELECT owner, expires_at, token, boot FROM lovia_run_leases WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO lovia_run_leases (run_id, owner, expires_at, token, boot) "
                    "VALUES (?, ?, ?, 1, ?)",
                    (run_id, owner, now + ttl, boot),
                )
                return 1
            held_by, expires, token, row_boot = row[0], float(row[1]), int(row[2]), row[3]
            if held_by != owner and row_boot == boot and expires > now:
                return None  # a live lease of another worker
            token = token if held_by == owner else token + 1
            conn.execute(
                "UPDATE lovia_run_leases SET owner = ?, expires_at = ?, token = ?, boot = ? "
                "WHERE run_id = ?",
                (owner, now + ttl, token, boot, run_id),
            )
            return token

        token = await self._db.write(take)
        if token is None:
            return False
        hold_lease(run_id, owner, token)
        return True

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Extend our lease by ``ttl`` seconds; ``False`` when another owner has taken it."""
        check_lease_args(run_id, owner, ttl)

        def renew(conn: sqlite3.Connection) -> bool:
            _ensure_table(conn, self._db.path)
            boot, now = self._clock.host()
            cur = conn.execute(
                "UPDATE lovia_run_leases SET expires_at = ?, boot = ? "
                "WHERE run_id = ? AND owner = ? AND expires_at >= 0 AND boot = ?",
                (now + ttl, boot, run_id, owner, boot),
            )
            return cur.rowcount > 0

        return await self._db.write(renew)

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op when ``owner`` no longer holds it); its token stays,
        so the next holder's is higher."""
        check_lease_args(run_id, owner, 1.0)

        def release(conn: sqlite3.Connection) -> None:
            _ensure_table(conn, self._db.path)
            conn.execute(
                "UPDATE lovia_run_leases SET expires_at = ? WHERE run_id = ? AND owner = ?",
                (_RELEASED, run_id, owner),
            )

        await self._db.write(release)
        if (held_lease(run_id) or ("",))[0] == owner:
            hold_lease(run_id, owner, None)

    async def lease_holder(self, run_id: str) -> str | None:
        """The owner of the unexpired lease on ``run_id``, or ``None``."""
        check_lease_args(run_id, "reader", 1.0)

        def holder(conn: sqlite3.Connection) -> str | None:
            _ensure_table(conn, self._db.path)
            boot, now = self._clock.host()
            row = conn.execute(
                "SELECT owner FROM lovia_run_leases WHERE run_id = ? AND expires_at > ? "
                "AND boot = ?",
                (run_id, now, boot),
            ).fetchone()
            return None if row is None else str(row[0])

        return await self._db.write(holder)


def has_leases(conn: sqlite3.Connection) -> bool:
    """True when leases were ever taken in this file (the lease table exists)."""
    row = conn.execute("SELECT value FROM lovia_meta WHERE key = 'schema:lease'").fetchone()
    return row is not None and int(row[0]) >= LEASE_SCHEMA_VERSION


def check_lease_fence(conn: sqlite3.Connection, run_id: str, held: tuple[str, int] | None) -> None:
    """Inside a save's transaction: refuse it when this task's lease was taken over."""
    if held is None:
        return  # this task took no lease
    try:
        found = conn.execute(
            "SELECT owner, token FROM lovia_run_leases WHERE run_id = ?", (run_id,)
        ).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such" in str(exc):  # no lease was ever taken in this file (or not with tokens)
            return
        raise
    check_fence(run_id, held, None if found is None else (str(found[0]), int(found[1])))


def _ensure_table(conn: sqlite3.Connection, path: str) -> None:
    """Create or upgrade the lease component; a newer one is refused untouched."""
    row = conn.execute("SELECT value FROM lovia_meta WHERE key = 'schema:lease'").fetchone()
    current = int(row[0]) if row else 0
    if current == LEASE_SCHEMA_VERSION:
        return
    if current > LEASE_SCHEMA_VERSION:
        raise SchemaError(
            f"{path!r} holds a lease schema of version {current}; this lovia reads up to "
            f"version {LEASE_SCHEMA_VERSION}",
            hint="upgrade lovia to open this file; it was left unchanged",
        )
    if current < 1:
        conn.execute(_CREATE)
    for statement in _UPGRADE:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO lovia_meta (key, value) VALUES ('schema:lease', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(LEASE_SCHEMA_VERSION),),
    )
