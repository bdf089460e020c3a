"""Crash harness at scale: SIGKILL a realistic agent anywhere, re-submit, count the damage.

    python benchmarks/chaos.py [--trials 500] [--seed 1] [--quick] [--postgres DSN]

Each trial runs the agent of ``tests/chaos/child.py`` (parallel tool calls, a handoff, a
charge guarded by ``on_resume``, a session and a checkpoint in one SQLite file) in child
processes that kill themselves at a random step boundary, then re-submits until done, and
checks it as ``tests/chaos/harness.py`` describes. Prints JSON; all counts but ``trials``,
``kills`` and ``attempts`` should be 0.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.chaos.harness import (
    Target,
    baseline,
    first_points,
    plan_kills,
    run_trial,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="5 trials, for CI")
    parser.add_argument("--postgres", metavar="DSN", help="the stores on PostgreSQL, not SQLite")
    args = parser.parse_args()
    if args.quick:
        args.trials = 5
    rng = random.Random(args.seed)
    started = time.perf_counter()
    totals: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lovia-chaos-") as tmp:
        root = Path(tmp)
        base = baseline(root / "baseline")
        points = base.points()
        for i, first in enumerate(first_points(rng, points, args.trials)):
            target = None
            if args.postgres:
                target = Target(args.postgres, prefix=f"chaos_{uuid.uuid4().hex[:8]}_")
            kills = plan_kills(rng, points, first)
            trial = run_trial(root / f"t{i}", base, kills, wal=i % 2 == 1, target=target)
            totals["kills"] += len(trial.kills)
            totals["attempts"] += trial.attempts
            totals["lost_entries"] += trial.lost_entries
            totals["extra_entries"] += trial.extra_entries
            totals["duplicated_segments"] += trial.duplicated_segments
            totals["reexecuted_completed_calls"] += trial.reexecuted_completed
            totals["prompts_with_dangling_calls"] += trial.prompt_violations
            totals["failed_trials"] += bool(trial.problems)
            by_kind.update(k.split(":")[0] for k in trial.kills)
            problems += [f"trial {i}: {p}" for p in trial.problems[:3]]
    report = {
        "trials": args.trials,
        "backend": "postgres" if args.postgres else "sqlite",
        "seed": args.seed,
        "kill_points": len(points),
        **{
            k: totals[k]
            for k in (
                "kills",
                "attempts",
                "lost_entries",
                "extra_entries",
                "duplicated_segments",
                "reexecuted_completed_calls",
                "prompts_with_dangling_calls",
                "failed_trials",
            )
        },
        "kills_by_point": dict(sorted(by_kind.items())),
        "seconds": round(time.perf_counter() - started, 1),
        "first_problems": problems[:10],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
