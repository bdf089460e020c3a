"""The parent side of the crash harness: run the child agent, kill it, re-submit, check.

One trial = a fresh SQLite file holding an earlier session segment, then child processes of
``child.py`` on it: the first (and, by chance, some re-submissions) told to SIGKILL itself at
one step boundary, re-submitted with the same ``run_id`` until one exits cleanly. Then the
trial checks what the promise says (see docs/guarantees.md):

- the final output equals the one of an uninterrupted run;
- the session holds the earlier segment and exactly one segment for the run, whose entries
  equal the uninterrupted run's (tool results of one turn compared as a set, since a
  re-executed dangling call may finish in another order);
- no call whose result was stored before a kill ran again; the charge took effect once;
- no prompt ever carried a tool call without its result (the child exits 3 if one did);
- ``PRAGMA integrity_check`` says ``ok`` (SQLite; PostgreSQL checks its own constraints).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lovia import (
    AssistantTextEntry,
    InputEntry,
    ToolResultEntry,
    TranscriptEntry,
    entry_to_dict,
)

from .child import open_stores

CHILD = Path(__file__).with_name("child.py")
RUN_ID = "chaos-run"
SESSION_ID = "chaos-session"
EARLIER: list[TranscriptEntry] = [
    InputEntry(role="user", content="hi"),
    AssistantTextEntry(content="hello"),
]
MAX_ATTEMPTS = 8
KINDS = (
    "lease",
    "cp_before",
    "cp_after",
    "sess_before",
    "sess_after",
    "tool_start",
    "tool_end",
    "model",
)


@dataclass
class Baseline:
    """What an uninterrupted run produces, and how often it passes each kill point."""

    output: str
    entries: list[TranscriptEntry]
    counts: dict[str, int]

    def points(self) -> list[str]:
        """Every kill point of an uninterrupted run, as ``KIND:N``."""
        return [f"{k}:{n}" for k in KINDS for n in range(1, self.counts.get(k, 0) + 1)]


@dataclass
class Trial:
    kills: list[str] = field(default_factory=list)  # the specs that fired
    attempts: int = 0
    problems: list[str] = field(default_factory=list)
    lost_entries: int = 0
    extra_entries: int = 0
    duplicated_segments: int = 0
    reexecuted_completed: int = 0
    prompt_violations: int = 0
    report: dict[str, Any] = field(default_factory=dict)  # the clean attempt's JSON line


@dataclass(frozen=True)
class Target:
    """Where a trial's stores live: one SQLite file, or tables under a prefix in PostgreSQL."""

    db: str
    prefix: str = "lovia_"

    @property
    def postgres(self) -> bool:
        return self.db.startswith("postgresql://")

    def drop(self) -> None:
        """Remove a PostgreSQL trial's tables (a SQLite trial's file goes with its directory)."""
        if not self.postgres:
            return
        import psycopg

        with psycopg.connect(self.db, autocommit=True) as conn:
            names = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
                " AND starts_with(tablename, %s)",
                (self.prefix,),
            ).fetchall()
            for (name,) in names:
                conn.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')


def child(
    target: Target,
    logdir: Path,
    attempt: int,
    *,
    wal: bool,
    kill: str | None,
    restart: bool = False,
) -> Any:
    args = [sys.executable, str(CHILD), target.db, str(logdir), str(attempt)]
    args += ["--prefix", target.prefix]
    if wal:
        args.append("--wal")
    if restart:
        args.append("--restart")
    if kill:
        args += ["--kill", kill]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.run(args, capture_output=True, text=True, timeout=60, env=env)


def seed(target: Target) -> None:
    async def go() -> None:
        async with open_stores(target.db, wal=False, prefix=target.prefix) as (s, _):
            await s.append(SESSION_ID, EARLIER, run_id="earlier")

    asyncio.run(go())


def baseline(workdir: Path) -> Baseline:
    workdir.mkdir(parents=True, exist_ok=True)
    target = Target(str(workdir / "baseline.db"))
    seed(target)
    done = child(target, workdir, 0, wal=False, kill=None)
    if done.returncode != 0:
        raise RuntimeError(f"the uninterrupted run failed:\n{done.stderr}")
    report = json.loads(done.stdout)
    segments = _segments(target)
    return Baseline(report["output"], segments[-1][1], report["counts"])


def _segments(target: Target) -> list[tuple[str, list[TranscriptEntry]]]:
    async def go() -> list[tuple[str, list[TranscriptEntry]]]:
        async with open_stores(target.db, wal=False, prefix=target.prefix) as (s, _):
            return [(seg.run_id, seg.entries) for seg in await s.segments(SESSION_ID)]

    return asyncio.run(go())


def _snapshot(target: Target) -> tuple[str | None, list[TranscriptEntry]]:
    async def go() -> tuple[str | None, list[TranscriptEntry]]:
        async with open_stores(target.db, wal=False, prefix=target.prefix) as (_, cp):
            snap = await cp.load(RUN_ID)
        return (None, []) if snap is None else (snap.status, snap.entries)

    return asyncio.run(go())


def _stored_results(target: Target) -> set[str]:
    _, entries = _snapshot(target)
    return {e.call_id for e in entries if isinstance(e, ToolResultEntry)}


def normalized(entries: list[TranscriptEntry]) -> list[str]:
    """Entries as JSON text, each block of consecutive tool results sorted by call id."""
    out: list[str] = []
    block: list[str] = []
    for e in entries:
        text = json.dumps(entry_to_dict(e), sort_keys=True)
        if isinstance(e, ToolResultEntry):
            block.append(text)
            continue
        out += sorted(block)
        block = []
        out.append(text)
    return out + sorted(block)


def run_trial(
    workdir: Path,
    base: Baseline,
    kills: list[str],
    *,
    wal: bool,
    restart: bool = False,
    target: Target | None = None,
) -> Trial:
    """Run one trial in an empty ``workdir``; ``kills[i]`` is attempt i's kill point.

    The stores live in ``workdir/chaos.db`` unless ``target`` names PostgreSQL tables.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    db = target or Target(str(workdir / "chaos.db"))
    seed(db)
    trial = Trial()
    stored_at_kill: list[tuple[int, set[str]]] = []
    output: str | None = None
    for attempt in range(MAX_ATTEMPTS):
        kill = kills[attempt] if attempt < len(kills) else None
        done = child(db, workdir, attempt, wal=wal, kill=kill, restart=restart)
        trial.attempts += 1
        if done.returncode == -signal.SIGKILL:
            assert kill is not None
            trial.kills.append(kill)
            stored_at_kill.append((attempt, _stored_results(db)))
            continue
        if done.returncode == 3:
            trial.prompt_violations += 1
            trial.problems.append(f"attempt {attempt}: {done.stderr.strip()}")
            break
        if done.returncode != 0:
            trial.problems.append(f"attempt {attempt} exited {done.returncode}: {done.stderr}")
            break
        trial.report = json.loads(done.stdout)
        output = trial.report["output"]
        break
    else:
        trial.problems.append(f"not done after {MAX_ATTEMPTS} attempts")
    try:
        _check(trial, db, workdir, base, output, stored_at_kill)
    finally:
        db.drop()
    return trial


def _check(
    trial: Trial,
    db: Target,
    workdir: Path,
    base: Baseline,
    output: str | None,
    stored_at_kill: list[tuple[int, set[str]]],
) -> None:
    problems = trial.problems
    if output != base.output:
        problems.append(f"output {output!r} != {base.output!r}")
    segments = _segments(db)
    ids = [rid for rid, _ in segments]
    if ids[:1] != ["earlier"] or segments[0][1] != EARLIER:
        problems.append("the earlier segment changed")
    ours = [entries for rid, entries in segments if rid == RUN_ID]
    trial.duplicated_segments = max(0, len(ours) - 1)
    if len(ours) != 1 or len(segments) != 2:
        problems.append(f"segments {ids}: want ['earlier', {RUN_ID!r}]")
    got = Counter(normalized(ours[0]) if ours else [])
    want = Counter(normalized(base.entries))
    trial.lost_entries = sum((want - got).values())
    trial.extra_entries = sum((got - want).values())
    if ours and normalized(ours[0]) != normalized(base.entries):
        problems.append("the run's segment differs from the uninterrupted run's")
    status, cp_entries = _snapshot(db)
    if status != "completed" or (ours and cp_entries != ours[0]):
        problems.append(f"checkpoint is {status} or differs from the segment")
    # a call whose result was stored before a kill must never run in a later attempt
    for line in (workdir / "executions.log").read_text().splitlines():
        attempt_text, call_id, _ = line.split()
        after = int(attempt_text)
        if any(k < after and call_id in stored for k, stored in stored_at_kill):
            trial.reexecuted_completed += 1
            problems.append(f"{call_id} ran again in attempt {after} after its result was stored")
    charges = (workdir / "ledger.log").read_text().split()
    if charges != ["c-charge"]:
        problems.append(f"the charge took effect {len(charges)} times")
    if not db.postgres:
        conn = sqlite3.connect(db.db)
        try:
            check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            conn.close()
        if check != "ok":
            problems.append(f"integrity_check: {check}")


def plan_kills(rng: random.Random, points: list[str], first: str) -> list[str]:
    """The first attempt dies at ``first``; each re-submission dies again with 1 in 4 odds."""
    kills = [first]
    while len(kills) < 3 and rng.random() < 0.25:
        kills.append(rng.choice(points))
    return kills


def ends_and_sample(rng: random.Random, points: list[str], trials: int) -> list[str]:
    """The first and the last point of each kind (``cp_before:1`` and ``cp_before:13``), then
    others drawn by ``rng`` up to ``trials`` points, in shuffled order: every kind of boundary
    for a fraction of the trials that hitting every point takes."""
    ends: list[str] = []
    for kind in KINDS:
        numbered = [p for p in points if p.split(":")[0] == kind]
        ends += [q for q in dict.fromkeys(numbered[:1] + numbered[-1:]) if q not in ends]
    rest = [p for p in points if p not in ends]
    chosen = ends + rng.sample(rest, max(0, min(len(rest), trials - len(ends))))
    rng.shuffle(chosen)
    return chosen


def first_points(rng: random.Random, points: list[str], trials: int) -> list[str]:
    """Every point once (in shuffled order) before any point comes twice."""
    out: list[str] = []
    while len(out) < trials:
        batch = list(points)
        rng.shuffle(batch)
        out += batch
    return out[:trials]
