"""The parent side of the approval crash trials: park, decide, resume in child processes of
``approval_child.py``, each phase re-run after a SIGKILL until it ends, then check:

- an approved payment took effect exactly once; a rejected or undecided one never;
- the run's answer is the one an uninterrupted run gives (the payment's result, or the
  rejection with its reason); an undecided run is still parked with its call pending;
- ``note`` n-2, after the parked ``parallel=False`` call, never ran before the decision;
- no prompt carried a tool call without its result; a replay afterwards runs nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .approval_child import PARKED_EXIT, RUN_ID, VIOLATION_EXIT
from .child import open_stores
from .harness import Target

CHILD = Path(__file__).with_name("approval_child.py")
Verdict = Literal["yes", "no", "none"]
VERDICTS: tuple[Verdict, ...] = ("yes", "no", "none")
PHASES = ("park", "decide", "resume")
MAX_ATTEMPTS = 6
EXPECTED_OUTPUT = {
    "yes": "done: paid 7",
    "no": "done: Tool pay was not approved. Reason: policy",
}


@dataclass
class Trial:
    verdict: Verdict
    kills: list[str] = field(default_factory=list)  # "PHASE:KIND:N" that fired
    attempts: int = 0
    payments: int = 0
    double_executions: int = 0
    unapproved_executions: int = 0
    early_executions: int = 0
    prompt_violations: int = 0
    problems: list[str] = field(default_factory=list)


def child(
    target: Target,
    logdir: Path,
    attempt: int,
    phase: str,
    *,
    verdict: str | None = None,
    kill: str | None = None,
    hold: float = 0.0,
    go: Path | None = None,
) -> subprocess.Popen[str]:
    args = [sys.executable, str(CHILD), target.db, str(logdir), str(attempt), phase]
    args += ["--prefix", target.prefix]
    if verdict is not None:
        args += ["--verdict", verdict]
    if kill:
        args += ["--kill", kill]
    if hold:
        args += ["--hold", str(hold)]
    if go is not None:
        args += ["--go", str(go)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    out, err = proc.communicate(timeout=60)
    report = json.loads(out) if out.strip() else {}
    return proc.returncode, report, err


def snapshot(target: Target) -> Any:
    async def go() -> Any:
        async with open_stores(target.db, wal=False, prefix=target.prefix) as (_, cp):
            return await cp.load(RUN_ID)

    return asyncio.run(go())


def lines(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1] if path.exists() else []


def baseline_points(workdir: Path, verdict: Verdict) -> list[str]:
    """Every kill point an uninterrupted park / decide / resume passes, as PHASE:KIND:N."""
    workdir.mkdir(parents=True, exist_ok=True)
    target = Target(str(workdir / "baseline.db"))
    points: list[str] = []
    for phase in PHASES:
        if phase == "decide" and verdict == "none":
            continue
        code, report, err = finish(child(target, workdir, 0, phase, verdict=verdict))
        if code not in (0, PARKED_EXIT):
            raise RuntimeError(f"uninterrupted {phase} exited {code}: {err}")
        for kind, count in sorted(report["counts"].items()):
            points += [f"{phase}:{kind}:{n}" for n in range(1, count + 1)]
    return points


def run_phase(
    trial: Trial, target: Target, workdir: Path, phase: str, kills: list[str], want: int
) -> str | None:
    """Run ``phase`` until it exits ``want``; returns its output (``resume``), or ``None``."""
    for attempt in range(MAX_ATTEMPTS):
        kill = kills[attempt] if attempt < len(kills) else None
        proc = child(target, workdir, attempt, phase, verdict=trial.verdict, kill=kill)
        code, report, err = finish(proc)
        trial.attempts += 1
        if code == -signal.SIGKILL:
            trial.kills.append(f"{phase}:{kill}")
            continue
        if code == VIOLATION_EXIT:
            trial.prompt_violations += 1
        if code != want:
            trial.problems.append(f"{phase} attempt {attempt} exited {code}: {err.strip()}")
            return None
        output: str | None = report.get("output")
        return output
    trial.problems.append(f"{phase} not done after {MAX_ATTEMPTS} attempts")
    return None


def run_trial(
    workdir: Path,
    verdict: Verdict,
    kills: dict[str, list[str]],
    target: Target | None = None,
    *,
    replay: bool = True,
) -> Trial:
    """One trial in an empty ``workdir``; ``kills[phase][i]`` is that phase's attempt i's kill
    point (``KIND:N``). ``replay``: submit the finished run once more and check it runs
    nothing."""
    workdir.mkdir(parents=True, exist_ok=True)
    db = target or Target(str(workdir / "approvals.db"))
    trial = Trial(verdict)
    try:
        run_phase(trial, db, workdir, "park", kills.get("park", []), PARKED_EXIT)
        if verdict != "none" and not trial.problems:
            run_phase(trial, db, workdir, "decide", kills.get("decide", []), 0)
        want = PARKED_EXIT if verdict == "none" else 0
        output = None
        if not trial.problems:
            output = run_phase(trial, db, workdir, "resume", kills.get("resume", []), want)
        if not trial.problems:
            _check(trial, db, workdir, output, replay)
    finally:
        db.drop()
    return trial


def _check(trial: Trial, db: Target, workdir: Path, output: str | None, replay: bool) -> None:
    problems = trial.problems
    payments = lines(workdir / "ledger.log")
    trial.payments = len(payments)
    if trial.verdict == "yes":
        trial.double_executions = max(0, len(payments) - 1)
        if len(payments) != 1:
            problems.append(f"the approved payment took effect {len(payments)} times")
    else:
        trial.unapproved_executions = len(payments)
        if payments:
            problems.append(f"a {trial.verdict} payment took effect {len(payments)} times")
    executions = lines(workdir / "executions.log")
    trial.early_executions = sum(e.startswith("park") and e.endswith("n-2") for e in executions)
    if trial.early_executions:
        problems.append("n-2 ran before the parked call was decided")
    snap = snapshot(db)
    if trial.verdict == "none":
        pending = [(p.call_id, p.decision) for p in snap.pending_approvals]
        if snap.status != "interrupted" or pending != [("p-pay", None)]:
            problems.append(f"undecided run: {snap.status} {pending}")
        return
    if output != EXPECTED_OUTPUT[trial.verdict]:
        problems.append(f"output {output!r} != {EXPECTED_OUTPUT[trial.verdict]!r}")
    if snap.status != "completed" or snap.pending_approvals:
        problems.append(f"run {snap.status} with pending {snap.pending_approvals}")
    if not replay:
        return
    again = run_phase(trial, db, workdir, "resume", [], 0)
    if again != output or lines(workdir / "ledger.log") != payments:
        problems.append("the replay differs or ran the payment")


@dataclass
class Race:
    codes: dict[str, int]
    winner: str | None
    stored: str | None
    errors: list[str]
    other_changes: list[str]
    payments: int


def race_deciders(workdir: Path, target: Target | None = None, hold: float = 0.3) -> Race:
    """Park the run, then two processes decide at once, one ``yes`` and one ``no`` (each holds
    the head update open for ``hold`` s); then resume. Says who won and what was stored."""
    workdir.mkdir(parents=True, exist_ok=True)
    db = target or Target(str(workdir / "approvals.db"))
    try:
        code, _, err = finish(child(db, workdir, 0, "park"))
        if code != PARKED_EXIT:
            raise RuntimeError(f"park exited {code}: {err}")
        before = snapshot(db)
        go = workdir / "go"
        procs = {
            v: child(db, workdir, 0, "decide", verdict=v, hold=hold, go=go) for v in ("yes", "no")
        }
        deadline = time.monotonic() + 30
        while not all(Path(f"{go}.{v}").exists() for v in ("yes", "no")):
            if time.monotonic() > deadline:
                raise RuntimeError("the deciders did not start")
            time.sleep(0.01)  # both wait for the go file, their stores open
        go.touch()
        results = {v: finish(p) for v, p in procs.items()}
        codes = {v: r[0] for v, r in results.items()}
        errors = [r[1].get("error") or "" for r in results.values() if r[0] != 0]
        after = snapshot(db)
        stored = after.pending_approvals[0].decision if after.pending_approvals else None
        winners = [v for v, c in codes.items() if c == 0]
        changed = []
        b, a = before.head.to_dict(), after.head.to_dict()
        for key in b:
            if key == "pending_approvals":
                for pb, pa in zip(b[key], a[key], strict=True):
                    changed += [
                        f"pending.{k}"
                        for k in pb
                        if k not in ("decision", "reason") and pb[k] != pa[k]
                    ]
            elif b[key] != a[key]:
                changed.append(key)
        if after.entries != before.entries:
            changed.append("entries")
        code, _, err = finish(child(db, workdir, 1, "resume"))
        if code != 0:
            raise RuntimeError(f"resume exited {code}: {err}")
        return Race(
            codes=codes,
            winner=winners[0] if len(winners) == 1 else None,
            stored=stored,
            errors=errors,
            other_changes=changed,
            payments=len(lines(workdir / "ledger.log")),
        )
    finally:
        db.drop()
