"""The checkpointer backends every checkpoint contract test runs against.

Import ``checkpoint_backend`` / ``checkpointer`` into a test module to run it once per backend.
A new backend (PostgreSQL) is one more entry in ``BACKENDS`` and one more branch in ``_open``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lovia import Checkpointer, InMemoryCheckpointer, SQLiteCheckpointer

from .pg import drop_prefix, fresh_prefix, postgres_dsn

BACKENDS = ["memory", "sqlite", "postgres"]


class CheckpointBackend:
    """Opens checkpointers on one backend's storage; ``reopen`` sees the same stored runs."""

    def __init__(self, name: str, tmp_path: Path) -> None:
        self.name = name
        self.path = tmp_path / "checkpoints.db"
        self.durable = name != "memory"
        self._opened: list[Any] = []
        self._memory = InMemoryCheckpointer()
        # postgres: a private table prefix, dropped after the test
        self.dsn = postgres_dsn() if name == "postgres" else ""
        self.prefix = fresh_prefix()

    def open(self) -> Checkpointer:
        cp: Checkpointer
        if self.name == "memory":
            cp = self._memory  # the process is the storage: "reopening" is the same object
        elif self.name == "sqlite":
            cp = SQLiteCheckpointer(self.path)
        elif self.name == "postgres":
            from lovia import PostgresCheckpointer

            cp = PostgresCheckpointer(self.dsn, table_prefix=self.prefix)
        else:  # pragma: no cover - a backend named in BACKENDS without a branch here
            raise AssertionError(f"no opener for backend {self.name!r}")
        self._opened.append(cp)
        return cp

    async def close(self) -> None:
        for cp in self._opened:
            close = getattr(cp, "close", None)
            if close is not None:
                await close()
        if self.dsn:
            drop_prefix(self.dsn, self.prefix)


@pytest.fixture(params=BACKENDS)
async def checkpoint_backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[CheckpointBackend]:
    backend = CheckpointBackend(request.param, tmp_path)
    yield backend
    await backend.close()


@pytest.fixture
def checkpointer(checkpoint_backend: CheckpointBackend) -> Checkpointer:
    return checkpoint_backend.open()
