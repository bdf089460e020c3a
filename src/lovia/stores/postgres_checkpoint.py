"""``PostgresCheckpointer``: runs in PostgreSQL, shared by every worker and host.

The same logical schema as ``SQLiteCheckpointer``: one head row per run in
``checkpoint_runs`` and one row per ``append`` in ``checkpoint_batches``. A save is a single
statement (an upsert of the head whose ``RETURNING`` feeds the batch insert), so it costs one
round trip and O(new entries) whatever the run's length. ``run_leases`` holds the run leases
(``acquire_lease`` / ``renew_lease`` / ``release_lease``), timed by the database server's
clock so hosts with skewed clocks still agree on who holds a run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UserTypeError
from ..transcript import TranscriptEntry
from ._checks import check_limit, check_run_ids, check_statuses, validate_id
from ._codec import decode_batches, encode_head
from ._entries import checked_entries
from ._pg_saves import ACQUIRE, FENCED_SAVE_WITH_BATCH, FENCED_UPSERT, NOW, SAVE_WITH_BATCH, UPSERT
from ._postgres import Conn, Migrations, PgDeadlines, PostgresStore
from ._text import encode_entries
from .checkpoint import RunHead, RunInfo, RunSnapshot, check_updated
from .fork import Forking
from .lease import LeaseClock, check_fence, check_lease_args, held_lease, hold_lease
from .pg_first_read import LOAD as _LOAD
from .pg_first_read import lease_load_then, with_history
from .pg_first_read import loaded as _loaded
from .pg_first_read import snapshot_of as _snapshot
from .retention import DEFAULT_PRUNE_STATUSES, prune_filter
from .session_version import SessionHistory

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresCheckpointer"]

MIGRATIONS: Migrations = {
    1: (
        """CREATE TABLE {checkpoint_runs} (
            run_key     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            run_id      text             NOT NULL UNIQUE,
            head        text             NOT NULL,
            status      text             NOT NULL,
            session_id  text,
            entry_count integer          NOT NULL,
            next_seq    integer          NOT NULL,
            created_at  double precision NOT NULL,
            updated_at  double precision NOT NULL
        )""",
        "CREATE INDEX ON {checkpoint_runs} (updated_at)",
        """CREATE TABLE {checkpoint_batches} (
            run_key bigint  NOT NULL REFERENCES {checkpoint_runs} (run_key) ON DELETE CASCADE,
            seq     integer NOT NULL,
            entries text    NOT NULL,
            PRIMARY KEY (run_key, seq)
        )""",
        """CREATE TABLE {run_leases} (
            run_id     text        PRIMARY KEY,
            owner      text        NOT NULL,
            expires_at timestamptz NOT NULL
        )""",
    ),
    # the fencing token: it grows whenever another owner takes the run; a released lease
    # keeps its row (expired) so the next holder's token is still higher
    2: ("ALTER TABLE {run_leases} ADD COLUMN token bigint NOT NULL DEFAULT 1",),
    # a chat's (a session's) runs are found without reading every head: the web page asks
    # for one chat's unfinished run on each request
    3: ("CREATE INDEX ON {checkpoint_runs} (session_id)",),
}


class PostgresCheckpointer(PostgresStore, Forking):
    """A ``Checkpointer`` in PostgreSQL; many workers on many hosts may share it.

    ``dsn_or_pool`` and ``table_prefix`` work as for ``PostgresSession`` (the two may share
    a pool and a prefix). Tables: ``<prefix>checkpoint_runs``, ``<prefix>checkpoint_batches``
    and ``<prefix>run_leases``. Besides the protocol: ``list_runs``, the run-lease methods,
    ``close`` and ``async with``.
    """

    _component = "checkpoint"
    _migrations = MIGRATIONS
    _tables = ("checkpoint_runs", "checkpoint_batches", "run_leases")

    def __init__(
        self,
        dsn_or_pool: str | AsyncConnectionPool[Any],
        *,
        table_prefix: str = "lovia_",
        min_size: int = 0,
        max_size: int = 4,
        close_pool: bool | None = None,
        read_only: bool = False,
        clock: LeaseClock | None = None,
        deadlines: PgDeadlines | None = None,
    ) -> None:
        super().__init__(
            dsn_or_pool,
            table_prefix=table_prefix,
            min_size=min_size,
            max_size=max_size,
            close_pool=close_pool,
            read_only=read_only,
            deadlines=deadlines,
        )
        self._clock = clock or LeaseClock()

    # -- the protocol -----------------------------------------------------------------------

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        """Add ``entries`` after the stored ones and replace the head, in one statement."""
        validate_id(run_id, "run_id")
        self._db.check_writable()
        entries = checked_entries(entries)
        if not isinstance(head, RunHead):
            raise UserTypeError(
                f"head must be a RunHead, got {type(head).__name__}",
                hint="pass a RunHead(agent_name=...); a run's head is snapshot.head",
            )
        # Encode before any I/O, so a value JSON cannot hold fails with nothing written.
        params: dict[str, Any] = {
            "run_id": run_id,
            "head": encode_head(run_id, head),
            "status": head.status,
            "session_id": head.session_id,
            "count": len(entries),
            "bump": 1 if entries else 0,
            "updated_at": head.updated_at,  # the head's own time orders list_runs everywhere
            "batch": encode_entries(entries).decode() if entries else None,
        }
        statement = self._db.q(SAVE_WITH_BATCH if entries else UPSERT)
        held = held_lease(run_id)
        if held is None:

            async def save(conn: Conn) -> None:
                await conn.execute(statement, params)

            await self._db.read(save)  # one statement: atomic without an explicit transaction
            return
        # one statement, one round trip: the lease row is locked against a takeover (FOR
        # SHARE) and checked before the save writes anything, and the save commits with it
        fenced = self._db.q(FENCED_SAVE_WITH_BATCH if entries else FENCED_UPSERT)
        params["owner"], params["token"] = held

        async def fenced_save(conn: Conn) -> Any:
            cur = await conn.execute(fenced, params)
            return await cur.fetchone()

        row = await self._db.read(fenced_save)  # one statement: atomic
        if row is not None and row[0] is not None:
            check_fence(run_id, held, (str(row[0]), int(row[1])))

    async def load(self, run_id: str) -> RunSnapshot | None:
        """The run's entries in order with its latest head, or ``None`` for an unknown id."""
        validate_id(run_id, "run_id")
        query = self._db.q(_LOAD + " WHERE r.run_id = %s ORDER BY b.seq")

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(query, (run_id,))
            return await cur.fetchall()

        return _loaded(run_id, await self._db.read(read))

    async def delete(self, run_id: str) -> None:
        """Forget the run (head and entries); a later append starts it afresh."""
        validate_id(run_id, "run_id")
        self._db.check_writable()
        delete = self._db.q("DELETE FROM {checkpoint_runs} WHERE run_id = %s")

        async def drop(conn: Conn) -> None:
            await conn.execute(delete, (run_id,))

        await self._db.read(drop)

    async def update_head(
        self, run_id: str, fn: Callable[[RunHead], RunHead | None]
    ) -> RunHead | None:
        """Replace the run's head with ``fn(head)`` in one transaction (``None`` from ``fn``:
        keep it). Returns the head now stored, or ``None`` when the run does not exist."""
        return await self.update_head_with(run_id, fn, None)

    async def update_head_with(
        self,
        run_id: str,
        fn: Callable[[RunHead], RunHead | None],
        then: Callable[[Conn, RunHead], Awaitable[None]] | None,
    ) -> RunHead | None:
        """``update_head``, and once the head changed, ``await then(conn, head)`` in the same
        transaction: an approval's decision and the job that resumes its run (``lovia web
        --workers``) commit together or not at all."""
        validate_id(run_id, "run_id")
        select = self._db.q("SELECT head FROM {checkpoint_runs} WHERE run_id = %s FOR UPDATE")
        update = self._db.q(
            "UPDATE {checkpoint_runs} SET head = %s, status = %s, session_id = %s, "
            "updated_at = %s WHERE run_id = %s"
        )

        async def change(conn: Conn) -> RunHead | None:
            cur = await conn.execute(select, (run_id,))
            row = await cur.fetchone()
            if row is None:
                return None
            head = _snapshot(run_id, row[0], []).head
            new = check_updated(fn(head))
            if new is None:
                return head
            values = (encode_head(run_id, new), new.status, new.session_id, new.updated_at)
            await conn.execute(update, (*values, run_id))
            stored = RunHead.from_dict(new.to_dict())
            if then is not None:
                await then(conn, stored)
            return stored

        return await self._db.write(change)

    # -- maintenance (not part of the protocol) ---------------------------------------------

    async def list_runs(
        self, *, statuses: Sequence[str] | None = None, session_id: str | None = None
    ) -> list[RunSnapshot]:
        """Every stored run (heads and entries), newest first, optionally only these statuses
        and only the runs of ``session_id`` (the others' entries are not read)."""
        wanted = check_statuses(statuses)
        if wanted == ():
            return []
        conditions: list[str] = []
        params: tuple[Any, ...] = ()
        if wanted is not None:
            conditions.append("r.status = ANY(%s)")
            params = (list(wanted),)
        if session_id is not None:
            conditions.append("r.session_id = %s")
            params = (*params, session_id)
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        query = self._db.q(_LOAD + where + " ORDER BY r.updated_at DESC, r.run_key DESC, b.seq")

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(query, params)
            return await cur.fetchall()

        grouped: dict[int, tuple[str, str, list[str]]] = {}
        for run_key, rid, head_json, batch in await self._db.read(read):
            found = grouped.setdefault(run_key, (rid, head_json, []))
            if batch is not None:
                found[2].append(batch)
        return [_snapshot(rid, h, batches) for rid, h, batches in grouped.values()]

    async def list_run_heads(
        self, *, statuses: Sequence[str] | None = None, session_id: str | None = None
    ) -> list[RunInfo]:
        """Like ``list_runs`` without the entries: each run's id, head and entry count,
        newest first (the entries are never read, however long the runs are)."""
        wanted = check_statuses(statuses)
        if session_id is not None:
            validate_id(session_id, "session_id")
        if wanted == ():
            return []
        conditions: list[str] = []
        params: tuple[Any, ...] = ()
        if wanted is not None:
            conditions.append("status = ANY(%s)")
            params = (list(wanted),)
        if session_id is not None:
            conditions.append("session_id = %s")
            params = (*params, session_id)
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        query = self._db.q(
            "SELECT run_id, head, entry_count FROM {checkpoint_runs}"
            + where
            + " ORDER BY updated_at DESC, run_key DESC"
        )

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(query, params)
            return await cur.fetchall()

        return [
            RunInfo(rid, _snapshot(rid, head, []).head, int(count))
            for rid, head, count in await self._db.read(read)
        ]

    async def load_first_entries(
        self, run_ids: Sequence[str], *, limit: int = 1
    ) -> dict[str, list[TranscriptEntry]]:
        """The first ``limit`` entries of each of these runs (all of a shorter run's), by run
        id; an unknown id is left out. One query for them all, of the runs' first saves only,
        however long the runs are."""
        ids = check_run_ids(run_ids)
        count = check_limit(limit)
        if not ids:
            return {}
        # a save adds a row of one entry or more: ``limit`` rows per run hold enough
        query = self._db.q(
            "SELECT r.run_id, b.entries FROM {checkpoint_runs} r LEFT JOIN LATERAL ("
            "SELECT entries, seq FROM {checkpoint_batches} WHERE run_key = r.run_key "
            "ORDER BY seq LIMIT %s) b ON true WHERE r.run_id = ANY(%s) ORDER BY r.run_key, b.seq"
        )

        async def read(conn: Conn) -> list[Any]:
            cur = await conn.execute(query, (count, list(ids)))
            return await cur.fetchall()

        grouped: dict[str, list[str]] = {}
        for run_id, batch in await self._db.read(read):
            batches = grouped.setdefault(run_id, [])
            if batch is not None:
                batches.append(batch)
        return {
            run_id: decode_batches(run_id, batches, backup="database")[:count]
            for run_id, batches in grouped.items()
        }

    async def prune(
        self,
        *,
        older_than: float | None = None,
        statuses: Sequence[str] = DEFAULT_PRUNE_STATUSES,
    ) -> int:
        """Delete runs with these statuses last saved over ``older_than`` seconds ago.

        Returns how many runs were deleted, in one statement; sessions are untouched. A
        pruned ``run_id`` starts afresh when submitted again.
        """
        cutoff, wanted = prune_filter(older_than, statuses)
        self._db.check_writable()
        if not wanted:
            return 0
        where = "" if cutoff is None else " AND updated_at < %s"
        # a run a live worker holds is never pruned under it
        where += f" AND run_id NOT IN (SELECT run_id FROM {{run_leases}} WHERE expires_at > {NOW})"
        query = self._db.q("DELETE FROM {checkpoint_runs} WHERE status = ANY(%s)" + where)
        params: tuple[Any, ...] = (list(wanted),) if cutoff is None else (list(wanted), cutoff)
        params += (self._clock.offset,)

        async def drop(conn: Conn) -> int:
            cur = await conn.execute(query, params)  # batches go with their run (CASCADE)
            return cur.rowcount

        return await self._db.read(drop)

    # -- run leases (see lovia.stores.lease) ------------------------------------------------

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Take the lease on ``run_id`` for ``ttl`` seconds: free, expired or already ours."""
        check_lease_args(run_id, owner, ttl)
        self._db.check_writable()
        query = self._db.q(ACQUIRE)

        async def run(conn: Conn) -> int | None:
            offset = self._clock.offset
            cur = await conn.execute(query, (run_id, owner, offset, float(ttl), offset))
            row = await cur.fetchone()
            return None if row is None else int(row[0])

        token = await self._db.read(run)
        if token is None:
            return False
        hold_lease(run_id, owner, token)
        return True

    async def acquire_lease_and_load(
        self, run_id: str, owner: str, ttl: float
    ) -> tuple[bool, RunSnapshot | None]:
        """``acquire_lease``, then ``load`` (whether or not it was taken) in one round trip:
        two transactions in a pipeline, so the load sees every save before the lease."""
        taken, snapshot, _ = await lease_load_then(self, run_id, owner, ttl, None)
        return taken, snapshot

    async def acquire_lease_load_and_history(
        self, run_id: str, owner: str, ttl: float, session: Any, session_id: str
    ) -> tuple[bool, RunSnapshot | None, SessionHistory | None]:
        """``acquire_lease_and_load`` and, in the same round trip, ``session.history
        (session_id)`` when ``session`` is a ``PostgresSession`` on this store's pool (else
        ``None`` for it): a checkpointed run's first read (``pg_first_read``)."""
        return await with_history(self, session, session_id, run_id, owner, ttl)

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        """Extend our lease by ``ttl`` seconds; ``False`` when another owner has taken it."""
        check_lease_args(run_id, owner, ttl)
        query = self._db.q(
            f"UPDATE {{run_leases}} SET expires_at = {NOW} + %s * interval '1 second' "
            "WHERE run_id = %s AND owner = %s AND expires_at > '-infinity' RETURNING 1"
        )
        return await self._lease_query(query, (self._clock.offset, float(ttl), run_id, owner))

    async def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease up (a no-op when ``owner`` no longer holds it)."""
        check_lease_args(run_id, owner, 1.0)
        query = self._db.q(
            "UPDATE {run_leases} SET expires_at = '-infinity' WHERE run_id = %s AND owner = %s"
        )
        await self._lease_query(query, (run_id, owner))
        if (held_lease(run_id) or ("",))[0] == owner:
            hold_lease(run_id, owner, None)

    async def lease_holder(self, run_id: str) -> str | None:
        """The owner of the unexpired lease on ``run_id``, or ``None``."""
        validate_id(run_id, "run_id")
        query = self._db.q(
            f"SELECT owner FROM {{run_leases}} WHERE run_id = %s AND expires_at >= {NOW}"
        )

        async def run(conn: Conn) -> str | None:
            cur = await conn.execute(query, (run_id, self._clock.offset))
            row = await cur.fetchone()
            return None if row is None else str(row[0])

        return await self._db.read(run)

    async def _lease_query(self, query: Any, params: tuple[Any, ...]) -> bool:
        self._db.check_writable()

        async def run(conn: Conn) -> bool:
            cur = await conn.execute(query, params)
            return cur.rowcount > 0

        return await self._db.read(run)


if TYPE_CHECKING:  # mypy --strict holds the store to the fork it declares (the edits included)
    from .capabilities import ForksRuns

    _FORKS: type[ForksRuns] = PostgresCheckpointer
