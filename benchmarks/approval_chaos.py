"""Approval crash matrix: SIGKILL at every boundary of park / decide / resume, count damage.

    python benchmarks/approval_chaos.py [--seed 1] [--repeat 1] [--races 5] [--postgres DSN]

For each verdict (approve, reject, never decided) and each kill point an uninterrupted
park, decide and resume pass (checkpoint saves, the decision's head update, the run lease,
the model call, before and after the payment's effect, the other tools), one trial kills
that phase there (and, with 1 in 4 odds, once more on its re-run), re-runs it until it ends,
and checks what ``tests/chaos/approval_harness.py`` describes. Then ``--races`` times, two
processes decide at once with opposite verdicts. Prints JSON; every count but ``trials``,
``kills``, ``attempts`` and the race winners should be 0.
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

from tests.chaos.approval_harness import VERDICTS, baseline_points, race_deciders, run_trial
from tests.chaos.harness import Target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="trials per kill point")
    parser.add_argument("--races", type=int, default=5)
    parser.add_argument("--postgres", metavar="DSN", help="the stores on PostgreSQL")
    parser.add_argument("--quick", action="store_true", help="1 resume point, 1 race (CI smoke)")
    args = parser.parse_args()
    verdicts = VERDICTS
    if args.quick:
        verdicts, args.races = ("yes",), 1
    rng = random.Random(args.seed)
    started = time.perf_counter()
    totals: Counter[str] = Counter()
    by_phase: Counter[str] = Counter()
    problems: list[str] = []
    races: Counter[str] = Counter()

    def target() -> Target | None:
        if not args.postgres:
            return None
        return Target(args.postgres, prefix=f"achaos_{uuid.uuid4().hex[:8]}_")

    with tempfile.TemporaryDirectory(prefix="lovia-approval-chaos-") as tmp:
        root = Path(tmp)
        n = 0
        points_total = 0
        for verdict in verdicts:
            points = baseline_points(root / f"baseline-{verdict}", verdict)
            if args.quick:
                points = [p for p in points if p.startswith("resume:")][:1]
            points_total += len(points)
            for spec in points * args.repeat:
                phase, point = spec.split(":", 1)
                kills = [point] + ([point] if rng.random() < 0.25 else [])
                trial = run_trial(root / f"t{n}", verdict, {phase: kills}, target())
                n += 1
                totals["trials"] += 1
                totals["kills"] += len(trial.kills)
                totals["attempts"] += trial.attempts
                totals["unfired_kill_points"] += spec not in trial.kills
                totals["double_executions"] += trial.double_executions
                totals["unapproved_executions"] += trial.unapproved_executions
                totals["executed_before_decision"] += trial.early_executions
                totals["prompts_with_dangling_calls"] += trial.prompt_violations
                totals["failed_trials"] += bool(trial.problems)
                by_phase.update(k.split(":")[0] for k in trial.kills)
                problems += [f"{verdict} {trial.kills}: {p}" for p in trial.problems[:2]]
        for i in range(args.races):
            race = race_deciders(root / f"race{i}", target())
            ok = (
                sorted(race.codes.values()) == [0, 4]
                and race.stored == ("allow" if race.winner == "yes" else "deny")
                and not race.other_changes
                and race.payments == (1 if race.winner == "yes" else 0)
            )
            races[f"won_by_{race.winner}"] += 1
            races["bad_outcomes"] += not ok
    report = {
        "backend": "postgres" if args.postgres else "sqlite",
        "seed": args.seed,
        "kill_points": points_total,
        **{
            k: totals[k]
            for k in (
                "trials",
                "kills",
                "attempts",
                "unfired_kill_points",
                "double_executions",
                "unapproved_executions",
                "executed_before_decision",
                "prompts_with_dangling_calls",
                "failed_trials",
            )
        },
        "kills_by_phase": dict(sorted(by_phase.items())),
        "races": dict(sorted(races.items())),
        "seconds": round(time.perf_counter() - started, 1),
        "first_problems": problems[:10],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
