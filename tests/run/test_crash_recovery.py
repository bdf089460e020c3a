"""Crash recovery with real processes (C2, C6, C8, C10, C12), on the one crash harness of
``tests/chaos``: a worker killed with SIGKILL at a chosen point re-submits the same run and
gets the uninterrupted run's answer; only the call in flight runs again; the session ends up
holding the run exactly once. The harness checks all of that on every trial (see its
docstring); these tests name three kill points and what else each one promises."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.chaos.harness import RUN_ID, Target, _segments, baseline, child, run_trial

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")


def executions(workdir: Path) -> list[str]:
    """The call ids of every tool execution, in order (``ATTEMPT CALL_ID NAME`` lines)."""
    return [line.split()[1] for line in (workdir / "executions.log").read_text().splitlines()]


def test_a_worker_killed_inside_a_tool_resumes_and_reruns_only_that_call(tmp_path: Path) -> None:
    """C10/E2: the calls with results never run again; those in flight (the first turn's
    parallel calls) do, once more."""
    base = baseline(tmp_path / "base")
    trial = run_trial(tmp_path / "t", base, ["tool_start:2"], wal=True)
    assert trial.problems == [] and trial.kills == ["tool_start:2"] and trial.attempts == 2
    assert trial.report["replayed"] is False
    runs = Counter(executions(tmp_path / "t"))
    twice = {c for c, n in runs.items() if n > 1}
    assert twice and twice <= {"l-a", "l-b", "w-oslo"}  # only calls of the interrupted turn
    assert trial.reexecuted_completed == 0 and runs["c-charge"] == 1


def test_a_worker_killed_right_after_a_model_turn_was_saved_does_not_ask_for_it_again(
    tmp_path: Path,
) -> None:
    """C2: the saved model turn is not asked again; its calls, never started, run once."""
    base = baseline(tmp_path / "base")
    trial = run_trial(tmp_path / "t", base, ["turn_saved:1"], wal=True)
    assert trial.problems == [] and trial.kills == ["turn_saved:1"]
    assert trial.report["counts"]["model"] == base.counts["model"] - 1
    assert all(n == 1 for n in Counter(executions(tmp_path / "t")).values())


def test_a_worker_killed_between_completed_and_session_append_is_repaired_by_replay(
    tmp_path: Path,
) -> None:
    """C12/C8: the checkpoint says completed; re-submitting replays it (no model, no tools)
    and writes the session segment exactly once, however often it is re-submitted; the
    session version it loaded is unchanged, so the checked append lands (issue 9)."""
    base = baseline(tmp_path / "base")
    workdir = tmp_path / "t"
    trial = run_trial(workdir, base, ["sess_before:1"], wal=True)
    assert trial.problems == [] and trial.kills == ["sess_before:1"]
    ran = executions(workdir)
    for report in [trial.report, _resubmit(workdir)]:
        assert report["replayed"] is True
        assert report["counts"].get("model", 0) == 0
        assert report["output"] == base.output
    assert executions(workdir) == ran  # no tool ran in a replay
    assert [rid for rid, _ in _segments(Target(str(workdir / "chaos.db")))] == ["earlier", RUN_ID]


def _resubmit(workdir: Path) -> dict[str, object]:
    done = child(Target(str(workdir / "chaos.db")), workdir, 9, wal=True, kill=None)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report
