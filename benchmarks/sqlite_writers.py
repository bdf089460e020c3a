"""Several processes appending to one SQLite file. Prints JSON; asserts nothing.

Run: python benchmarks/sqlite_writers.py [--quick] [--procs N] [--runs R]

Each process runs ``R`` runs through ``Runner.run`` (scripted model: one tool call with a
~1 KB result, then a final text) on its own session of one ``SQLiteSession(path, wal=True)``
file: every run reads its session's history and appends one segment. The same work is timed
with one process and with ``N`` processes started together (each waits for a "go" line,
so start-up is not timed). On a machine with ``C`` cores the ideal for ``N`` processes is
``N / min(N, C)`` times the one-process wall time; what lies above that is waiting for the
file's write lock. Target: 4 processes at most 2.2x one process on 2 cores, no errors.
``--quick`` uses 2 processes x 20 runs.

On a shared Linux machine the ratio says more about the scheduler than about the file: with
autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``) every session gets an
equal share of the CPU, so while other sessions are busy ``N`` processes get no more CPU than
one and the ratio drifts toward ``N`` from that alone. Compare figures taken at the same
moment, or run this in its own session with its group's CPU weight raised (as root:
``setsid sh -c 'echo -19 > /proc/self/autogroup; exec python benchmarks/sqlite_writers.py'``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lovia import Agent, Runner, SQLiteSession, tool
from lovia.context import NoopContextPolicy
from lovia.testing import ScriptedProvider, call, text

RESULT = ("lorem ipsum dolor sit amet " * 40)[:1024]


@tool
def lookup(q: str) -> str:
    """Look something up (returns ~1 KB)."""
    return RESULT


def agent(tag: str) -> Agent:
    script = [call("lookup", {"q": tag}, call_id=f"{tag}_c"), text("Done.")]
    return Agent(
        name="writer",
        instructions="Look it up, then answer.",
        model=ScriptedProvider(script),
        tools=[lookup],
        context_policy=NoopContextPolicy(),
    )


async def worker(path: str, session_id: str, runs: int) -> dict[str, Any]:
    session = SQLiteSession(path, wal=True)
    await session.segments(session_id)  # opened (schema checked) before the start line
    print("ready", flush=True)
    sys.stdin.readline()
    errors: dict[str, int] = {}
    started = time.perf_counter()
    for i in range(runs):
        try:
            await Runner.run(
                agent(f"{session_id}r{i}"), f"question {i}", session=session, session_id=session_id
            )
        except Exception as exc:  # counted, the run goes on
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
    seconds = time.perf_counter() - started
    stored = len(await session.segments(session_id))
    await session.close()
    return {"seconds": seconds, "errors": errors, "stored": stored}


def together(path: str, procs: int, runs: int) -> dict[str, Any]:
    """``procs`` workers started together; wall time from the go line to the last exit."""
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", path, f"s{k}", str(runs)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(procs)
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    for child in children:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    # each worker prints its figures when its runs are done: process exit is not timed
    results = [json.loads(child.stdout.readline()) for child in children if child.stdout]
    wall = time.perf_counter() - started
    for child in children:
        child.communicate()
    errors: dict[str, int] = {}
    for r in results:
        for kind, n in r["errors"].items():
            errors[kind] = errors.get(kind, 0) + n
    return {
        "procs": procs,
        "runs_per_proc": runs,
        "wall_seconds": round(wall, 3),
        "per_proc_seconds": [round(r["seconds"], 3) for r in results],
        "errors": errors,
        "runs_stored": sum(r["stored"] for r in results),
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        path, session_id, runs = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps(asyncio.run(worker(path, session_id, runs))), flush=True)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 processes x 20 runs")
    parser.add_argument("--procs", type=int, default=None, help="processes (default 4)")
    parser.add_argument("--runs", type=int, default=None, help="runs per process (default 200)")
    args = parser.parse_args()
    procs = args.procs or (2 if args.quick else 4)
    runs = args.runs or (20 if args.quick else 200)
    with tempfile.TemporaryDirectory(prefix="lovia-writers-") as tmp:
        one = together(str(Path(tmp) / "one.db"), 1, runs)
        many = together(str(Path(tmp) / "many.db"), procs, runs)
    cores = os.cpu_count() or 1
    ideal = procs / min(procs, cores)
    ratio = many["wall_seconds"] / one["wall_seconds"] if one["wall_seconds"] else None
    figures = {
        "store": "SQLiteSession(path, wal=True), one session per process",
        "cpus": cores,
        "one_process": one,
        "processes": many,
        "ratio_to_one_process": None if ratio is None else round(ratio, 2),
        "ideal_ratio": round(ideal, 2),
        "target_ratio": 2.2 if procs == 4 else None,
        "loadavg": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
