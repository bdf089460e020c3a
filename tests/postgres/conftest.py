"""Fixtures for the PostgreSQL and queue tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.stores.pg import postgres_dsn


@pytest.fixture
def queue_dsn() -> Iterator[str]:
    """The test database with a schema of its own first on the search path: the queue's
    tables (procrastinate's and lovia's) are created there and dropped after the test, so
    parallel runs never see each other's jobs."""
    dsn = postgres_dsn()
    import psycopg

    schema = f"q{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in dsn else "?"
    try:
        yield f"{dsn}{sep}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND query LIKE %s",
                (f"%{schema}%",),
            )
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
