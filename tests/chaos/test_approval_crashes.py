"""SIGKILL at the boundaries of the approve-then-execute path (issue 15): park, decide and
resume run in child processes that kill themselves at one point and are re-run until they
end. An approved payment takes effect once, a rejected or undecided one never. A fixed
subset here; ``benchmarks/approval_chaos.py`` runs every point of every phase."""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path

import pytest

from .approval_child import USER_ERROR_EXIT
from .approval_harness import Verdict, race_deciders, run_trial
from .harness import Target

# (verdict, phase, kill point): the consuming save, the payment's effect and the decision's
# write, plus a few chosen by a fixed seed
CRITICAL: list[tuple[Verdict, str, str]] = [
    ("yes", "resume", "cp_after:1"),  # the approval consumed, the call marked started
    ("yes", "resume", "pay_start:1"),  # started, no effect yet: in doubt, on_resume reruns
    ("yes", "resume", "pay_end:1"),  # effect done, result not saved: on_resume finds it
    ("yes", "decide", "decide_after:1"),
    ("no", "resume", "cp_after:1"),
    ("none", "resume", "cp_before:1"),
]
SEED = 20261203


def extra_kills(rng: random.Random) -> list[tuple[Verdict, str, str]]:
    choices: list[tuple[Verdict, str, str]] = [
        ("yes", "resume", "lease:1"),
        ("yes", "resume", "cp_before:2"),
        ("yes", "resume", "model:1"),
        ("no", "resume", "model:1"),
        ("no", "park", "note_end:1"),
        ("no", "decide", "decide_before:1"),
        ("yes", "park", "cp_after:3"),
        ("none", "park", "model:1"),
    ]
    return rng.sample(choices, 1)


def test_killed_anywhere_an_approved_call_runs_once_and_a_refused_one_never(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    failures: list[str] = []
    for i, (verdict, phase, point) in enumerate(CRITICAL + extra_kills(rng)):
        # the killed phase may die once more on its re-run (1 in 4)
        again = [point] if rng.random() < 0.25 else []
        # the first trial also replays the finished run (the others leave that to the benchmark)
        trial = run_trial(tmp_path / f"t{i}", verdict, {phase: [point, *again]}, replay=i == 0)
        if f"{phase}:{point}" not in trial.kills:
            failures.append(f"trial {i}: kill point {phase}:{point} never fired")
        failures += [f"trial {i} ({verdict}, kills {trial.kills}): {p}" for p in trial.problems]
        assert trial.double_executions == trial.unapproved_executions == 0
    assert failures == []


def test_the_trial_sees_a_payment_that_ran_twice(tmp_path: Path) -> None:
    """The checks can fail: a second ledger line before the resume is counted as a double
    execution."""
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "ledger.log").write_text("p-pay\n")
    trial = run_trial(tmp_path / "t", "yes", {}, replay=False)
    assert trial.double_executions == 1
    assert any("took effect 2 times" in p for p in trial.problems)


def targets() -> list[Target | None]:
    out: list[Target | None] = [None]  # SQLite in the race's folder
    dsn = os.environ.get("LOVIA_TEST_POSTGRES_DSN")
    if dsn:
        out.append(Target(dsn, prefix=f"race_{uuid.uuid4().hex[:8]}_"))
    elif os.environ.get("CI", "").lower() == "true":
        pytest.fail("CI must run the PostgreSQL approval race: set LOVIA_TEST_POSTGRES_DSN")
    return out


def test_two_deciders_at_once_with_opposite_verdicts_one_wins(tmp_path: Path) -> None:
    """Two processes decide the same call at once, yes and no, each holding its head update
    open: one wins, the other gets a UserError; nothing else in the run changes, and the
    resumed run follows the winner."""
    for n, target in enumerate(targets()):
        race = race_deciders(tmp_path / f"race{n}", target)
        assert sorted(race.codes.values()) == [0, USER_ERROR_EXIT], race
        assert race.winner is not None
        assert race.stored == ("allow" if race.winner == "yes" else "deny")
        assert len(race.errors) == 1 and "already decided" in race.errors[0]
        assert race.other_changes == []
        assert race.payments == (1 if race.winner == "yes" else 0)
