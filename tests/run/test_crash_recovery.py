"""Crash recovery with real processes (C2, C6, C8, C10, C12): a worker killed with SIGKILL
re-submits the same call and gets the right answer; only dangling calls run again; the
session ends up holding the run exactly once. The killed worker's run lease (the default 30 s,
with on_busy="fail") is taken over at once, because its holder is a dead process on this
host."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession

CHILD = Path(__file__).with_name("crash_child.py")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")


def run_worker(tmp_path: Path, kill_at: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(CHILD),
            str(tmp_path / "app.db"),
            "job-1",
            kill_at,
            str(tmp_path / "executions.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def killed(tmp_path: Path, kill_at: str) -> None:
    proc = run_worker(tmp_path, kill_at)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout == ""


def finished(tmp_path: Path) -> dict[str, Any]:
    proc = run_worker(tmp_path, "never")
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def executions(tmp_path: Path) -> list[str]:
    return (tmp_path / "executions.txt").read_text().splitlines()


async def stored(tmp_path: Path) -> tuple[Any, list[Any]]:
    async with SQLiteCheckpointer(tmp_path / "app.db") as cp:
        snap = await cp.load("job-1")
    async with SQLiteSession(tmp_path / "app.db") as session:
        segments = await session.segments("jobs")
    return snap, segments


async def test_a_worker_killed_inside_a_tool_resumes_and_reruns_only_that_call(
    tmp_path: Path,
) -> None:
    """C10/E2: work 1 has its result and never runs again; work 2 was in flight and does."""
    killed(tmp_path, "tool")
    snap, segments = await stored(tmp_path)
    assert snap is not None and snap.status == "running" and segments == []
    result = finished(tmp_path)
    assert result["output"] == "finished 2 units"
    assert result["results"] == ["work 1 done", "work 2 done"]
    assert result["model_calls"] == 1  # only the final answer was still to come
    assert executions(tmp_path) == ["work 1", "work 2", "work 2"]
    snap, segments = await stored(tmp_path)
    assert snap.status == "completed"
    assert [s.run_id for s in segments] == ["job-1"] and segments[0].entries == snap.entries


async def test_a_worker_killed_right_after_the_model_turn_was_saved_runs_the_call_once(
    tmp_path: Path,
) -> None:
    """C2: the saved model turn is not asked again; its call, never started, runs once."""
    killed(tmp_path, "model-saved")
    snap, _ = await stored(tmp_path)
    assert snap is not None and snap.turns == 2
    assert executions(tmp_path) == ["work 1"]
    result = finished(tmp_path)
    assert result["output"] == "finished 2 units"
    assert result["model_calls"] == 1
    assert executions(tmp_path) == ["work 1", "work 2"]
    snap, segments = await stored(tmp_path)
    assert snap.status == "completed" and [s.run_id for s in segments] == ["job-1"]


async def test_a_worker_killed_between_completed_and_session_append_is_repaired_by_replay(
    tmp_path: Path,
) -> None:
    """C12/C8: the checkpoint says completed; re-submitting replays it (no model, no tools)
    and writes the session segment exactly once, however often it is re-submitted; the
    session version it loaded is unchanged, so the checked append lands (issue 9)."""
    killed(tmp_path, "before-session")
    snap, segments = await stored(tmp_path)
    assert snap is not None and snap.status == "completed" and segments == []
    assert snap.session_version == 0  # the replay appends at the version the run loaded
    for _ in range(2):
        result = finished(tmp_path)
        assert result["replayed"] is True and result["model_calls"] == 0
        assert result["output"] == "finished 2 units"
    assert executions(tmp_path) == ["work 1", "work 2"]
    snap, segments = await stored(tmp_path)
    assert [s.run_id for s in segments] == ["job-1"] and segments[0].entries == snap.entries
