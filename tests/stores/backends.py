"""The store backends every store-parametrized test runs against, in one place.

``session_backend`` / ``session`` and ``checkpoint_backend`` / ``checkpointer`` run a test
once per entry of ``BACKENDS``; ``tests/stores/conftest.py`` offers the session pair to that
folder, and a module elsewhere imports the fixtures it uses by name. A new backend is one more
entry in ``BACKENDS`` and one more branch in ``Backend.open``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import pytest

from lovia import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer, SQLiteSession
from lovia.stores.lease import LeaseClock

from .pg import drop_prefix, fresh_prefix, postgres_dsn

BACKENDS = ["memory", "sqlite", "postgres"]

Kind = Literal["session", "checkpoint"]


class Backend:
    """Opens stores on one backend's storage; ``open()`` again sees the same data. ``kind``
    is what ``open()`` opens unless it is told. Every checkpointer it opens judges leases by
    ``clock``, which a test moves on (``clock.advance``) instead of sleeping past a ttl."""

    def __init__(self, name: str, tmp_path: Path, kind: Kind = "session") -> None:
        self.name = name
        self.kind = kind
        self._tmp_path = tmp_path
        self.path = self._file(kind)
        self.durable = name != "memory"
        self.clock = LeaseClock()
        self._memory: dict[Kind, Any] = {
            "session": InMemorySession(),
            "checkpoint": InMemoryCheckpointer(clock=self.clock),
        }
        self._opened: list[Any] = []
        # postgres: a private table prefix, dropped after the test
        self.dsn = postgres_dsn() if name == "postgres" else ""
        self.prefix = fresh_prefix()

    def _file(self, kind: Kind) -> Path:
        return self._tmp_path / ("sessions.db" if kind == "session" else "checkpoints.db")

    def open(self, kind: Kind | None = None) -> Any:
        """A store (typed ``Any``: the built-in maintenance methods are not protocol)."""
        kind = kind or self.kind
        store: Any
        if self.name == "memory":
            store = self._memory[kind]  # the process is the storage: reopening is the same
        elif self.name == "sqlite" and kind == "session":
            store = SQLiteSession(self._file(kind))
        elif self.name == "sqlite":
            store = SQLiteCheckpointer(self._file(kind), clock=self.clock)
        elif self.name == "postgres" and kind == "session":
            from lovia import PostgresSession

            store = PostgresSession(self.dsn, table_prefix=self.prefix)
        elif self.name == "postgres":
            from lovia import PostgresCheckpointer

            store = PostgresCheckpointer(self.dsn, table_prefix=self.prefix, clock=self.clock)
        else:  # pragma: no cover - a backend named in BACKENDS without a branch here
            raise AssertionError(f"no opener for backend {self.name!r}")
        self._opened.append(store)
        return store

    async def close(self) -> None:
        for store in self._opened:
            close = getattr(store, "close", None)
            if close is not None:
                await close()
        if self.dsn:
            drop_prefix(self.dsn, self.prefix)


def _backends(name: str, kind: Kind, doc: str) -> Any:
    """A fixture ``name`` that runs its test once per backend, with a ``Backend`` of ``kind``."""

    @pytest.fixture(params=BACKENDS, name=name)
    async def fixture(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
        backend = Backend(str(request.param), tmp_path, kind)
        yield backend
        await backend.close()

    fixture.__doc__ = doc
    return fixture


session_backend = _backends("session_backend", "session", "Session stores on one backend.")
checkpoint_backend = _backends("checkpoint_backend", "checkpoint", "Checkpointers on one backend.")
backend = _backends("backend", "session", "Both kinds of store on one backend (open(kind)).")


@pytest.fixture
def session(session_backend: Backend) -> Any:
    """One open session store of the current backend."""
    return session_backend.open()


@pytest.fixture
def checkpointer(checkpoint_backend: Backend) -> Any:
    """One open checkpointer of the current backend."""
    return checkpoint_backend.open()
