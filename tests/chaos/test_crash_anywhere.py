"""A run killed (SIGKILL) at any step boundary and re-submitted loses nothing and repeats
no finished work: 50 trials with a fixed seed (C2, C6, C10, C12, S5; docs/guarantees.md)."""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path

import pytest

from .harness import Baseline, Target, baseline, first_points, plan_kills, run_trial

SEED = 20261202
TRIALS = 50


def test_a_run_killed_at_any_step_boundary_finishes_with_nothing_lost_or_repeated(
    tmp_path: Path,
) -> None:
    """Every kill point of the agent (checkpoint saves, tools, model calls, session append)
    is hit at least once; each trial ends with the uninterrupted run's output and segment."""
    base: Baseline = baseline(tmp_path / "baseline")
    points = base.points()
    assert len(points) <= TRIALS, "more kill points than trials: raise TRIALS"
    rng = random.Random(SEED)
    failures: list[str] = []
    fired: set[str] = set()
    for i, first in enumerate(first_points(rng, points, TRIALS)):
        trial = run_trial(tmp_path / f"t{i}", base, plan_kills(rng, points, first), wal=i % 2 == 1)
        fired.update(k for k in trial.kills)
        failures += [f"trial {i} (kills {trial.kills}): {p}" for p in trial.problems]
    # results of parallel tools that finish together are saved together, so a loaded machine
    # can pass fewer save points than the baseline did: a point that did not fire gets up to
    # three more trials of its own, and must fire in one of them
    for extra, point in enumerate(sorted(set(points) - fired)):
        for again in range(3):
            where = tmp_path / f"extra{extra}-{again}"
            trial = run_trial(where, base, [point], wal=again % 2 == 1)
            fired.update(trial.kills)
            failures += [f"extra trial {point} (kills {trial.kills}): {p}" for p in trial.problems]
            if point in fired:
                break
    assert failures == []
    assert fired == set(points)


def test_the_harness_notices_a_resubmission_that_starts_over(tmp_path: Path) -> None:
    """The checks can fail: re-submitting with if_run_exists='restart' after a kill in the
    last model call (every tool result stored) re-runs the tools, and charges twice."""
    base = baseline(tmp_path / "baseline")
    after_charge = f"model:{base.counts['model']}"
    trial = run_trial(tmp_path / "t", base, [after_charge], wal=False, restart=True)
    assert trial.kills == [after_charge]
    assert trial.reexecuted_completed > 0
    assert any("the charge took effect 2 times" in p for p in trial.problems)


PG_TRIALS = 20


def test_the_same_crashes_on_postgresql_lose_and_repeat_nothing(tmp_path: Path) -> None:
    """The harness on PostgresSession + PostgresCheckpointer: 20 trials, fixed seed."""
    dsn = os.environ.get("LOVIA_TEST_POSTGRES_DSN")
    if not dsn:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI must run the PostgreSQL chaos trials: set LOVIA_TEST_POSTGRES_DSN")
        pytest.skip("LOVIA_TEST_POSTGRES_DSN is not set")
    base = baseline(tmp_path / "baseline")
    points = base.points()
    rng = random.Random(SEED + 1)
    failures: list[str] = []
    for i, first in enumerate(first_points(rng, points, PG_TRIALS)):
        target = Target(dsn, prefix=f"chaos_{uuid.uuid4().hex[:8]}_")
        trial = run_trial(
            tmp_path / f"t{i}", base, plan_kills(rng, points, first), wal=False, target=target
        )
        failures += [f"trial {i} (kills {trial.kills}): {p}" for p in trial.problems]
    assert failures == []
