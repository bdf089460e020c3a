"""Resume keeps working with the run features (issue 16): a budget's counts survive a crash
(carried in the checkpoint head), and a mailbox message injected before a crash is neither
lost nor doubled. Real child processes killed with SIGKILL, real SQLite."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lovia import InputEntry, SQLiteCheckpointer, SQLiteSession

CHILD = Path(__file__).with_name("feature_child.py")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")


def run_child(db: Path, mode: str, phase: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), str(db), mode, phase],
        capture_output=True,
        text=True,
        timeout=60,
    )


def steps(db: Path) -> list[str]:
    return Path(f"{db}.steps").read_text().split()


async def test_a_budget_counts_the_calls_made_before_the_crash(tmp_path: Path) -> None:
    """Two calls before the kill, a fresh RunBudget(max_tool_calls=3) on resume: the third
    call runs, the fourth exceeds the budget and does not run."""
    db = tmp_path / "runs.db"
    crashed = run_child(db, "budget", "crash")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    async with SQLiteCheckpointer(db) as cp:
        snap = await cp.load("job-1")
        assert snap is not None and snap.budget == {"tool_calls": 2}
        usage_before = snap.usage.total_tokens
    resumed = run_child(db, "budget", "resume")
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["error"].startswith("BudgetExceeded: tool call count 4 exceeds budget 3")
    assert steps(db) == ["1", "2", "3"]
    async with SQLiteCheckpointer(db) as cp:
        snap = await cp.load("job-1")
        assert snap is not None and snap.budget["tool_calls"] == 4  # s4 counted, never run
        assert snap.usage.total_tokens == 2 * usage_before  # two turns before, two after


async def test_a_message_injected_before_a_crash_is_kept_once(tmp_path: Path) -> None:
    """The message pushed during step 1 is injected at the next turn and saved; the process
    dies in that turn's model call. The resumed run's prompt holds the message once, and so
    do the checkpoint and the session."""
    db = tmp_path / "runs.db"
    crashed = run_child(db, "mailbox", "crash")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    note = "also check the invoice"
    async with SQLiteCheckpointer(db) as cp:
        snap = await cp.load("job-1")
        assert snap is not None and snap.status != "completed"
        assert [e.content for e in snap.entries if isinstance(e, InputEntry)].count(note) == 1
    resumed = run_child(db, "mailbox", "resume")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == "saw 1 notes"
    assert steps(db) == ["1"]
    async with SQLiteSession(db) as session:
        (segment,) = await session.segments("s")
        injected = [e for e in segment.entries if isinstance(e, InputEntry) and e.content == note]
        assert len(injected) == 1


async def test_a_call_in_doubt_is_counted_once_against_the_budget(tmp_path: Path) -> None:
    """The process dies inside step 2; the resume runs step 2 again (it was in flight) and
    step 3, as three distinct calls are within max_tool_calls=3; step 4 exceeds it."""
    db = tmp_path / "runs.db"
    crashed = run_child(db, "budget_tool", "crash")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = run_child(db, "budget_tool", "resume")
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["error"].startswith("BudgetExceeded: tool call count 4 exceeds budget 3")
    assert steps(db) == ["1", "2", "2", "3"]
