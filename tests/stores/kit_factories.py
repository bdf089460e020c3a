"""Factories of the built-in stores for the conformance kit (``MODULE:FACTORY`` names that
another process imports too): each takes the kit's directory and opens a store there.

PostgreSQL stores take a table prefix derived from the directory, so a second process that
opens the same directory opens the same tables; ``LOVIA_KIT_PG_TOKEN`` starts every prefix,
so the test that ran the kit drops them all afterwards.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from lovia import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer, SQLiteSession

TOKEN_ENV = "LOVIA_KIT_PG_TOKEN"


def memory_session(path: Path) -> InMemorySession:
    return InMemorySession()


def memory_checkpointer(path: Path) -> InMemoryCheckpointer:
    return InMemoryCheckpointer()


def sqlite_session(path: Path) -> SQLiteSession:
    return SQLiteSession(path / "sessions.db")


def sqlite_checkpointer(path: Path) -> SQLiteCheckpointer:
    return SQLiteCheckpointer(path / "checkpoints.db")


def pg_prefix(path: Path) -> str:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    return f"{os.environ.get(TOKEN_ENV, 'lkit')}_{digest}_"


def postgres_session(path: Path) -> object:
    from lovia import PostgresSession

    return PostgresSession(os.environ["LOVIA_TEST_POSTGRES_DSN"], table_prefix=pg_prefix(path))


def postgres_checkpointer(path: Path) -> object:
    from lovia import PostgresCheckpointer

    return PostgresCheckpointer(os.environ["LOVIA_TEST_POSTGRES_DSN"], table_prefix=pg_prefix(path))
