"""The statements of a ``PostgresCheckpointer`` save and lease: each is one statement, one
round trip.

``UPSERT`` replaces the run's head; ``SAVE_WITH_BATCH`` also adds the new entries (the
head's ``RETURNING`` feeds the batch insert). The ``FENCED_`` forms first lock the run's lease
row (``FOR SHARE``, until the statement commits) and write only when the lease is absent or
still the saver's (``owner``, ``token``); they return the lease row, so a refused save can
say who took the run over. ``{name}`` is a prefixed table.
"""

from __future__ import annotations

__all__ = [
    "ACQUIRE",
    "FENCED_SAVE_WITH_BATCH",
    "FENCED_UPSERT",
    "NOW",
    "SAVE_WITH_BATCH",
    "UPSERT",
]

# the lease clock: the server's, moved by the store's LeaseClock offset (one parameter)
NOW = "(clock_timestamp() + %s * interval '1 second')"

# a run lease taken when it is free, expired or already the owner's: its token, or no row
ACQUIRE = (
    "INSERT INTO {run_leases} AS l (run_id, owner, expires_at, token) "
    f"VALUES (%s, %s, {NOW} + %s * interval '1 second', 1) "
    "ON CONFLICT (run_id) DO UPDATE SET owner = excluded.owner, "
    "expires_at = excluded.expires_at, "
    "token = CASE WHEN l.owner = excluded.owner THEN l.token ELSE l.token + 1 END "
    f"WHERE l.owner = excluded.owner OR l.expires_at < {NOW} "
    "RETURNING token"
)

UPSERT = """INSERT INTO {checkpoint_runs} AS r (run_id, head, status, session_id,
        entry_count, next_seq, created_at, updated_at)
    VALUES (%(run_id)s, %(head)s, %(status)s, %(session_id)s, %(count)s, %(bump)s,
        extract(epoch FROM clock_timestamp()), %(updated_at)s)
    ON CONFLICT (run_id) DO UPDATE SET head = excluded.head, status = excluded.status,
        session_id = excluded.session_id, entry_count = r.entry_count + excluded.entry_count,
        next_seq = r.next_seq + excluded.next_seq, updated_at = excluded.updated_at
    RETURNING run_key, next_seq"""

SAVE_WITH_BATCH = (
    "WITH r AS (" + UPSERT + ") "
    "INSERT INTO {checkpoint_batches} (run_key, seq, entries) "
    "SELECT run_key, next_seq - 1, %(batch)s FROM r"
)

# the lease row (locked until the statement commits), and the save only when it is absent or
# still ours; the row comes back so a refused save can say who took the run over
_FENCE = (
    "WITH l AS (SELECT owner, token FROM {run_leases} WHERE run_id = %(run_id)s FOR SHARE), "
    "ok AS (SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM l WHERE owner IS DISTINCT FROM "
    "%(owner)s OR token IS DISTINCT FROM %(token)s)), "
)
FENCED_UPSERT = (
    _FENCE
    + "r AS ("
    + UPSERT.replace("    VALUES (", "    SELECT ").replace(
        "%(updated_at)s)\n    ON CONFLICT", "%(updated_at)s FROM ok\n    ON CONFLICT"
    )
    + ") SELECT (SELECT owner FROM l), (SELECT token FROM l), (SELECT count(*) FROM r)"
)
FENCED_SAVE_WITH_BATCH = FENCED_UPSERT.replace(
    ") SELECT (SELECT owner FROM l)",
    "), b AS (INSERT INTO {checkpoint_batches} (run_key, seq, entries) "
    "SELECT run_key, next_seq - 1, %(batch)s FROM r) SELECT (SELECT owner FROM l)",
)
