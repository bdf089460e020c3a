"""The PostgreSQL test database: where it is, and a private table prefix per test.

The DSN comes from ``LOVIA_TEST_POSTGRES_DSN`` (``.ci/run`` sets it). Outside CI a missing
DSN skips the PostgreSQL tests with a visible reason; in CI (``CI=true``) a missing DSN or an
unreachable server fails them, so they can never be skipped silently there.
"""

from __future__ import annotations

import os
import uuid

import pytest

ENV = "LOVIA_TEST_POSTGRES_DSN"


def postgres_dsn() -> str:
    """The test DSN after a connection check; skips (outside CI) or fails (in CI)."""
    in_ci = os.environ.get("CI", "").lower() == "true"
    dsn = os.environ.get(ENV, "")
    if not dsn:
        reason = f"{ENV} is not set; set it to e.g. postgresql://postgres@127.0.0.1:5432/test"
        if in_ci:
            pytest.fail(f"CI must run the PostgreSQL tests: {reason}")
        pytest.skip(reason)
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        message = f"PostgreSQL at {ENV} is unreachable: {exc}"
        if in_ci:
            pytest.fail(message)
        pytest.skip(message)
    return dsn


def fresh_prefix() -> str:
    """A table prefix no other test (or parallel run) uses."""
    return f"t{uuid.uuid4().hex[:12]}_"


def drop_prefix(dsn: str, prefix: str) -> None:
    """Drop every table whose name starts with ``prefix``."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "AND starts_with(tablename, %s)",
            (prefix,),
        ).fetchall()
        if not rows:
            return
        tables = sql.SQL(", ").join(sql.Identifier(r[0]) for r in rows)
        conn.execute("SET lock_timeout = '10s'")
        for attempt in range(3):
            # A connection of this test's stores still inside a transaction (a task the test
            # did not wait for, caught between two statements) holds locks the DROP would
            # wait on for ever: this thread is the one that task's event loop needs to go on.
            # The prefix is this test's alone, so whoever holds a lock on its tables is its own.
            conn.execute(
                "SELECT pg_terminate_backend(l.pid) FROM pg_locks l"
                " JOIN pg_class c ON c.oid = l.relation"
                " WHERE starts_with(c.relname, %s) AND l.pid <> pg_backend_pid()",
                (prefix,),
            )
            try:
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(tables))
                return
            except psycopg.errors.LockNotAvailable:
                if attempt == 2:
                    raise
