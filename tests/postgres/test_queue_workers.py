"""Agent jobs on a real arq queue (Redis) with checkpoints and sessions on PostgreSQL.

8 worker processes take 400 jobs (each a run with two tool calls); some workers are killed
with SIGKILL while they run jobs and replaced. arq redelivers the dead workers' jobs, their
checkpoints resume them, and duplicate deliveries replay. At the end every job has exactly
one completed run, no run was driven by two workers at once, and no segment is duplicated.
Issue 8 (C6, C8, C10, S5).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from lovia import (
    AssistantTextEntry,
    InputEntry,
    PostgresCheckpointer,
    PostgresSession,
    ToolCallEntry,
    ToolResultEntry,
)
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn

arq = pytest.importorskip("arq")
from arq.connections import ArqRedis  # noqa: E402
from arq.jobs import Job  # noqa: E402

from lovia.workers import enqueue_run  # noqa: E402

from .queue_app import create_tool_log, tool_log_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
JOBS = 400
WORKERS = 8
KILLS = 4
DUPLICATES = 40
SESSIONS = 20
DEADLINE_S = 100.0


@pytest.fixture
def dsn() -> str:
    return postgres_dsn()


@pytest.fixture
def prefix(dsn: str) -> Iterator[str]:
    name = fresh_prefix()
    yield name
    drop_prefix(dsn, name)


class Fleet:
    """The worker processes, started and killed by the test."""

    def __init__(self, queue_name: str, prefix: str, logs: Path) -> None:
        self.queue_name = queue_name
        self.prefix = prefix
        self.logs = logs
        self.procs: list[subprocess.Popen[bytes]] = []
        self.killed: dict[int, float] = {}  # pid -> when it was killed

    def start(self) -> subprocess.Popen[bytes]:
        out = (self.logs / f"worker-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.postgres.queue_app", self.queue_name, self.prefix],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        out.close()
        self.procs.append(proc)
        return proc

    def kill_one(self, rng: random.Random, busy_pids: set[int]) -> bool:
        """SIGKILL a worker that is inside a tool right now (so mid-run); then replace it."""
        alive = [p for p in self.procs if p.poll() is None and p.pid in busy_pids]
        if not alive:
            return False
        victim = rng.choice(alive)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        self.killed[victim.pid] = time.time()
        self.start()  # the fleet stays at full strength
        return True

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def count_completed(dsn: str, prefix: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            f"SELECT count(*) FROM \"{prefix}checkpoint_runs\" WHERE status = 'completed'"
        ).fetchone()
    return int(row[0]) if row else 0


def pids_inside_a_tool(dsn: str, prefix: str) -> set[int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            f"SELECT DISTINCT pid FROM {tool_log_table(prefix)} WHERE ended IS NULL"
        ).fetchall()
    return {r[0] for r in rows}


def tool_log(dsn: str, prefix: str) -> list[tuple[str, int, int, float, float | None]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            f"SELECT run_id, n, pid, started, ended FROM {tool_log_table(prefix)} ORDER BY id"
        ).fetchall()


def overlaps(
    rows: list[tuple[str, int, int, float, float | None]], killed: dict[int, float]
) -> list[str]:
    """Pairs of tool executions of one run, by two different workers, that overlap in time.

    A tool cut short by SIGKILL has no end: it lasted until its worker was killed.
    """
    by_run: dict[str, list[tuple[int, float, float]]] = {}
    for run_id, _, pid, started, ended in rows:
        end = ended if ended is not None else killed.get(pid, float("inf"))
        by_run.setdefault(run_id, []).append((pid, started, end))
    found = []
    for run_id, spans in by_run.items():
        for i, (pid_a, start_a, end_a) in enumerate(spans):
            for pid_b, start_b, end_b in spans[i + 1 :]:
                if pid_a != pid_b and start_a < end_b and start_b < end_a:
                    found.append(f"{run_id}: pid {pid_a} and pid {pid_b}")
    return found


async def create_store_tables(dsn: str, prefix: str) -> None:
    async with (
        PostgresCheckpointer(dsn, table_prefix=prefix) as cp,
        PostgresSession(dsn, table_prefix=prefix) as session,
    ):  # before the workers race to
        assert await cp.load("none") is None and await session.load("none") == []


async def wait_for_all_while_killing(dsn: str, prefix: str, fleet: Fleet) -> None:
    """Wait until every run completed, killing KILLS workers inside tools on the way."""
    rng = random.Random(8)
    started = time.monotonic()
    kills_done = 0
    while (done := count_completed(dsn, prefix)) < JOBS:
        assert time.monotonic() - started < DEADLINE_S, f"only {done} of {JOBS} runs completed"
        if kills_done < KILLS and done >= 30 + kills_done * 50:
            busy = pids_inside_a_tool(dsn, prefix) - set(fleet.killed)
            if fleet.kill_one(rng, busy):
                kills_done += 1
                continue
        await asyncio.sleep(0.2)
    assert kills_done == KILLS


def check_tool_log(dsn: str, prefix: str, run_ids: list[str], killed: dict[int, float]) -> None:
    rows = tool_log(dsn, prefix)
    assert not overlaps(rows, killed)
    # the kills landed inside runs: tools cut short, and runs finished by another worker
    cut_short = [r for r in rows if r[4] is None]
    assert cut_short and {r[2] for r in cut_short} <= set(killed)
    drivers: dict[str, set[int]] = {}
    for run_id, _, pid, _, _ in rows:
        drivers.setdefault(run_id, set()).add(pid)
    assert any(len(pids) > 1 for pids in drivers.values())
    # at least once: every step finished; a step ran twice only in a run a kill touched
    for rid in run_ids:
        steps = [r for r in rows if r[0] == rid]
        finished = sorted(r[1] for r in steps if r[4] is not None)
        assert set(finished) == {1, 2}, steps
        if not drivers[rid] & set(killed):
            assert finished == [1, 2] and len(steps) == 2, steps


async def check_stores(dsn: str, prefix: str, session_of: dict[str, str]) -> None:
    expected = [InputEntry, ToolCallEntry, ToolResultEntry, ToolCallEntry, ToolResultEntry]
    async with (
        PostgresCheckpointer(dsn, table_prefix=prefix) as cp,
        PostgresSession(dsn, table_prefix=prefix) as session,
    ):
        for rid in session_of:
            snap = await cp.load(rid)
            assert snap is not None and snap.status == "completed"
            kinds = [type(e) for e in snap.entries]
            assert kinds == [*expected, AssistantTextEntry], (rid, snap.entries)
        for sid in sorted(set(session_of.values())):
            ids = [s.run_id for s in await session.segments(sid)]
            assert len(ids) == len(set(ids))  # no segment duplicated
            assert set(ids) == {rid for rid, s in session_of.items() if s == sid}


@pytest.mark.slow
async def test_workers_killed_mid_run_lose_no_job_and_duplicate_nothing(
    dsn: str, prefix: str, redis: tuple[ArqRedis, str], tmp_path: Path
) -> None:
    pool, tag = redis
    queue_name = f"lovia-test:{tag}"
    create_tool_log(prefix)
    await create_store_tables(dsn, prefix)
    run_ids = [f"job-{tag}-{i:03d}" for i in range(JOBS)]
    session_of = {rid: f"user-{i % SESSIONS}" for i, rid in enumerate(run_ids)}
    # a second delivery of some runs while the first may still be running (another job id,
    # same run id): the lease makes it wait, then it replays
    duplicates = random.Random(4).sample(run_ids, DUPLICATES)
    fleet = Fleet(queue_name, prefix, tmp_path)
    try:
        for _ in range(WORKERS):
            fleet.start()
        for rid in run_ids:
            job = await enqueue_run(
                pool, rid, f"do {rid}", session_id=session_of[rid], queue_name=queue_name
            )
            assert job is not None
        for rid in duplicates:
            again = f"{rid}-again"
            await enqueue_run(
                pool,
                rid,
                f"do {rid}",
                session_id=session_of[rid],
                queue_name=queue_name,
                job_id=again,
            )
        await wait_for_all_while_killing(dsn, prefix, fleet)
        # every job id (originals and duplicates) finished as a success in arq
        job_ids = [*run_ids, *(f"{rid}-again" for rid in duplicates)]
        summaries = [await Job(j, pool).result(timeout=DEADLINE_S) for j in job_ids]
    finally:
        fleet.stop()

    assert {s["run_id"] for s in summaries} == set(run_ids)
    assert all(s["output"] == "done" for s in summaries)
    assert any(s["job_try"] > 1 for s in summaries)  # arq redelivered the dead workers' jobs
    # two deliveries of one run never both drive it to the end: at least one replays
    for rid in duplicates:
        pair = [s for s in summaries if s["run_id"] == rid]
        assert len(pair) == 2 and any(s["replayed"] for s in pair), pair
    check_tool_log(dsn, prefix, run_ids, fleet.killed)
    await check_stores(dsn, prefix, session_of)
