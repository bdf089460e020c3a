"""Workers as real ``lovia worker`` processes on one PostgreSQL, hit while they run tools:
SIGKILL, ``pg_terminate_backend`` of their connections, and a TCP proxy that resets them.
No run is lost, none runs twice, no saved tool result is computed again. A fixed-seed subset;
``benchmarks/queue_faults.py`` runs the whole matrix. Issue 34 (C6, C8, C10, S5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .queue_fleet import run_scenario

pytest.importorskip("procrastinate")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["kill9", "terminate", "reset"])
async def test_faults_lose_no_run_and_run_none_twice(
    queue_dsn: str, tmp_path: Path, kind: str
) -> None:
    report = await run_scenario(queue_dsn, tmp_path, kind=kind, runs=24, workers=2, faults=2)
    if kind == "kill9":
        assert report["runs_retried"] >= 1  # a dead worker's run was handed back and resumed
