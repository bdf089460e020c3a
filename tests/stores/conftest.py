"""Fixtures: every test asking for ``session`` or ``session_backend`` runs once per backend.

A new backend (PostgreSQL) is one more entry in ``SESSION_BACKENDS`` and one more branch in
``SessionBackend.open``; every contract test then runs against it too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lovia import InMemorySession
from lovia.stores.sqlite_session import SQLiteSession

from .pg import drop_prefix, fresh_prefix, postgres_dsn

SESSION_BACKENDS = ["memory", "sqlite", "postgres"]


class SessionBackend:
    """Opens session stores on one backend's storage; ``open()`` again sees the same data."""

    def __init__(self, name: str, tmp_path: Path) -> None:
        self.name = name
        self.path = tmp_path / "sessions.db"
        self.durable = name != "memory"
        self._memory = InMemorySession()
        self._opened: list[Any] = []
        # postgres: a private table prefix, dropped after the test
        self.dsn = postgres_dsn() if name == "postgres" else ""
        self.prefix = fresh_prefix()

    def open(self) -> Any:
        """A store with the built-in maintenance methods (typed ``Any``: they are not protocol)."""
        store: Any
        if self.name == "memory":
            store = self._memory  # the process is the storage: "reopening" is the same object
        elif self.name == "sqlite":
            store = SQLiteSession(self.path)
        elif self.name == "postgres":
            from lovia import PostgresSession

            store = PostgresSession(self.dsn, table_prefix=self.prefix)
        else:  # pragma: no cover - a backend listed without a branch here
            raise AssertionError(f"no opener for session backend {self.name!r}")
        self._opened.append(store)
        return store

    async def close(self) -> None:
        for store in self._opened:
            close = getattr(store, "close", None)
            if close is not None:
                await close()
        if self.dsn:
            drop_prefix(self.dsn, self.prefix)


@pytest.fixture(params=SESSION_BACKENDS)
async def session_backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[SessionBackend]:
    backend = SessionBackend(str(request.param), tmp_path)
    yield backend
    await backend.close()


@pytest.fixture
def session(session_backend: SessionBackend) -> Any:
    """One open session store of the current backend."""
    return session_backend.open()
