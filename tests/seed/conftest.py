"""The stores the seed tests run on, and a way to run the worker process.

Every store here is real: a SQLite file (journal or WAL mode) or a private table prefix in
the PostgreSQL database named by ``LOVIA_TEST_POSTGRES_DSN``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn

from .worker import open_stores

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("worker.py")


@dataclass
class Store:
    spec: dict[str, Any]

    def open(self) -> tuple[Any, Any]:
        """A (session, checkpointer) pair of this process on the shared storage."""
        return open_stores(self.spec)


@pytest.fixture(params=["sqlite", "sqlite-wal", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    kind = request.param
    if kind == "postgres":
        dsn, prefix = postgres_dsn(), fresh_prefix()
        yield Store({"kind": kind, "dsn": dsn, "prefix": prefix})
        drop_prefix(dsn, prefix)
    else:
        yield Store({"kind": kind, "path": str(tmp_path / "app.db")})


@dataclass
class Done:
    returncode: int
    answer: dict[str, Any] | None
    stderr: str


def run_worker(cfg: dict[str, Any]) -> Done:
    """Run the worker in a fresh Python process; ``answer`` is its JSON line, if it printed one."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.seed.worker", json.dumps(cfg)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return Done(proc.returncode, json.loads(lines[-1]) if lines else None, proc.stderr)
