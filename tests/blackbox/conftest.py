"""Fixtures for the black-box tests: every session and checkpoint store lovia ships, on real
files and a real PostgreSQL database (skipped outside CI without ``LOVIA_TEST_POSTGRES_DSN``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lovia import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer, SQLiteSession

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn

KINDS = ["memory", "sqlite", "sqlite-wal", "postgres"]


async def _open(kind: str, tmp_path: Path) -> tuple[Any, Any, Any]:
    """(session, checkpointer, cleanup) of one kind."""
    if kind == "memory":
        return InMemorySession(), InMemoryCheckpointer(), None
    if kind.startswith("sqlite"):
        wal = kind == "sqlite-wal"
        db = tmp_path / "stores.db"
        return SQLiteSession(db, wal=wal), SQLiteCheckpointer(db, wal=wal), None
    from lovia import PostgresCheckpointer, PostgresSession

    dsn = postgres_dsn()
    prefix = fresh_prefix()
    return (
        PostgresSession(dsn, table_prefix=prefix),
        PostgresCheckpointer(dsn, table_prefix=prefix),
        (dsn, prefix),
    )


@pytest.fixture(params=KINDS)
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Any, Any]]:
    """A session store and a checkpointer of one kind, closed (and dropped) afterwards."""
    session, checkpointer, cleanup = await _open(request.param, tmp_path)
    try:
        yield session, checkpointer
    finally:
        for store in (session, checkpointer):
            close = getattr(store, "close", None)
            if close is not None:
                await close()
        if cleanup is not None:
            drop_prefix(*cleanup)
