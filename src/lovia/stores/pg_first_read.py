"""A checkpointed run's first read from PostgreSQL in one round trip: its lease taken, its
checkpoint loaded and, when its session is kept in the same database, the session's history.

The run needs all three before its first model call. Sent as three statements in one
pipeline (each its own transaction, in order), the load and the history are read after the
lease is taken, as when they went one round trip each. The history goes along only when the
session store shares the checkpointer's connection pool (``open_stores`` and ``AgentQueue``
open one pool for both) and its tables are ready; otherwise the run reads it itself later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._codec import decode_snapshot
from ._pg_saves import ACQUIRE
from ._postgres import Conn
from .checkpoint import RunSnapshot
from .lease import check_lease_args, hold_lease
from .session_version import SessionHistory

__all__ = ["LOAD", "lease_load_then", "loaded", "snapshot_of", "with_history"]

LOAD = """SELECT r.run_key, r.run_id, r.head, b.entries FROM {checkpoint_runs} r
    LEFT JOIN {checkpoint_batches} b ON b.run_key = r.run_key"""


def loaded(run_id: str, rows: list[Any]) -> RunSnapshot | None:
    """The snapshot of ``LOAD``'s rows of one run (none: no such run)."""
    if not rows:
        return None
    return snapshot_of(run_id, rows[0][2], [r[3] for r in rows if r[3] is not None])


def snapshot_of(run_id: str, head_json: str, batches: Sequence[str]) -> RunSnapshot:
    return decode_snapshot(run_id, head_json, batches, backup="database")


async def lease_load_then(
    store: Any, run_id: str, owner: str, ttl: float, then: tuple[Any, tuple[Any, ...]] | None
) -> tuple[bool, RunSnapshot | None, list[Any] | None]:
    """``store`` (a ``PostgresCheckpointer``) takes the lease on ``run_id`` and loads it,
    then runs ``then`` (a query and its parameters) in the same pipeline: ``(taken,
    snapshot, then's rows)``."""
    check_lease_args(run_id, owner, ttl)
    db = store._db
    db.check_writable()
    acquire = db.q(ACQUIRE)
    load = db.q(LOAD + " WHERE r.run_id = %s ORDER BY b.seq")

    async def run(conn: Conn) -> tuple[Any, list[Any], list[Any] | None]:
        offset = store._clock.offset
        async with conn.pipeline():
            took = await conn.execute(acquire, (run_id, owner, offset, float(ttl), offset))
            read = await conn.execute(load, (run_id,))
            more = await conn.execute(then[0], then[1]) if then is not None else None
        token, rows = await took.fetchone(), await read.fetchall()
        return token, rows, (await more.fetchall() if more is not None else None)

    token, rows, extra = await db.read(run)
    if token is not None:
        hold_lease(run_id, owner, int(token[0]))
    return token is not None, loaded(run_id, rows), extra


async def with_history(
    store: Any, session: Any, session_id: str, run_id: str, owner: str, ttl: float
) -> tuple[bool, RunSnapshot | None, SessionHistory | None]:
    """``store.acquire_lease_and_load`` with ``session``'s history of ``session_id`` read in
    the same round trip when ``session`` is a PostgreSQL session on ``store``'s pool (else
    ``None`` for it: the run reads it by itself)."""
    db = getattr(session, "_db", None)
    if (
        getattr(session, "_history_query", None) is None
        or db is None
        or db.pool is not store._db.pool  # (a pool renewed after a lost link)
        or not db._ready
    ):
        taken, snap = await store.acquire_lease_and_load(run_id, owner, ttl)
        return taken, snap, None
    then = session._history_query(session_id)
    taken, snap, rows = await lease_load_then(store, run_id, owner, ttl, then)
    return taken, snap, session._history_of(session_id, rows or [])
