"""The conformance kit (issue 35): the built-in stores pass it through the same suites a
third-party backend runs (the shell and plugin ways: test_conformance_kit_cli.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from lovia.testing.conformance.suite import CheckpointerSuite, SessionSuite
from tests.stores import kit_factories as f
from tests.stores.pg import drop_prefix, postgres_dsn


class TestMemorySession(SessionSuite):
    session_factory = f.memory_session


class TestMemoryCheckpointer(CheckpointerSuite):
    checkpointer_factory = f.memory_checkpointer


class TestSQLiteSession(SessionSuite):
    session_factory = "tests.stores.kit_factories:sqlite_session"


class TestSQLiteCheckpointer(CheckpointerSuite):
    checkpointer_factory = f.sqlite_checkpointer


@pytest.fixture
def pg_tables(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A table-name token for this test's PostgreSQL stores (in every process), dropped
    afterwards."""
    dsn = postgres_dsn()
    token = f"lkit{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv(f.TOKEN_ENV, token)
    yield
    drop_prefix(dsn, token)


@pytest.mark.usefixtures("pg_tables")
class TestPostgresSession(SessionSuite):
    session_factory = f.postgres_session


@pytest.mark.usefixtures("pg_tables")
class TestPostgresCheckpointer(CheckpointerSuite):
    checkpointer_factory = f.postgres_checkpointer
