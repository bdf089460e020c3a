"""The SQLite stores' schemas: each component's migrations, by schema version.

Beside the stores (``sqlite_session``, ``sqlite_checkpoint``) and below them, so that the
0.9.119 converter, which runs inside the SQLite plumbing when it opens an old file, creates
this lovia's tables without importing the stores that sit on that plumbing.
"""

from __future__ import annotations

from ._schema import Migrations

__all__ = ["CHECKPOINT_MIGRATIONS", "SESSION_MIGRATIONS"]

SESSION_MIGRATIONS: Migrations = {
    1: (
        """
        CREATE TABLE lovia_session_segments (
            seq         INTEGER PRIMARY KEY,
            session_id  TEXT    NOT NULL,
            run_id      TEXT    NOT NULL,
            entries     TEXT    NOT NULL,
            meta        TEXT,
            n_entries   INTEGER NOT NULL,
            title       TEXT,
            created_at  REAL    NOT NULL,
            updated_at  REAL    NOT NULL,
            UNIQUE (session_id, run_id)
        )
        """,
        "CREATE INDEX lovia_session_segments_order ON lovia_session_segments (session_id, seq)",
        # one row per session ever written, never deleted: ``revision`` grows with every
        # change and ``rewrites`` with every change that is not an append, so a reader can
        # tell "unchanged" and "only appended to" from one indexed lookup
        """
        CREATE TABLE lovia_session_heads (
            session_id  TEXT    PRIMARY KEY,
            revision    INTEGER NOT NULL,
            rewrites    INTEGER NOT NULL
        )
        """,
    ),
}


CHECKPOINT_MIGRATIONS: Migrations = {
    1: (
        """CREATE TABLE checkpoint_runs (
            run_key INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL UNIQUE,
            head TEXT NOT NULL,
            status TEXT NOT NULL,
            session_id TEXT,
            entry_count INTEGER NOT NULL,
            next_seq INTEGER NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""",
        # One b-tree, clustered by run then order: a save touches one leaf page of it, and
        # load reads one run's batches in order without a second index.
        """CREATE TABLE checkpoint_batches (
            run_key INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            entries BLOB NOT NULL,
            PRIMARY KEY (run_key, seq)
        ) WITHOUT ROWID""",
    ),
    # a chat's (a session's) runs are found without reading every head: the web page asks
    # for one chat's unfinished run on each request
    2: ("CREATE INDEX checkpoint_runs_session ON checkpoint_runs (session_id)",),
}
