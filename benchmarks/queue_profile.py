"""Where a queued run's time goes: SQL round trips per run, and a cProfile of a worker; JSON.

    python benchmarks/queue_profile.py --runs 200 --dsn postgresql://...

Runs ``--runs`` runs of ``queue_throughput.py``'s workload (one tool call, checkpointed, a
session per conversation) through an in-process worker (``run_worker(wait=False)``), in a
fresh schema, after a few warm-up runs. Every statement psycopg sends is counted (each
``execute`` or internal command such as ``BEGIN`` and ``COMMIT`` is one round trip; those
sent in a pipeline are counted apart, as ``pipelined``), by its first words, and the worker's
and its PostgreSQL server processes' CPU time per run; ``--profile N`` adds the N costliest
functions by CPU time (``--sort tottime``: by their own time).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import io
import json
import os
import pstats
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "benchmarks")]

from queue_throughput import (  # noqa: E402
    backends,
    cpu_ms_per_run,
    cpu_s,
    drop_schema,
    queue,
    with_schema,
)

from lovia.workers import AgentQueue  # noqa: E402

COUNTS: collections.Counter[str] = collections.Counter()
TRACE: list[str] = []
ON = [False]
CPU = [0.0]
PG_CPU = [0.0]


def _label(query: Any) -> str:
    if isinstance(query, bytes):
        query = query.decode()
    text = query if isinstance(query, str) else getattr(query, "_obj", None) or repr(query)
    text = re.sub(r"\s+", " ", str(text)).strip()
    return text[:90] or "(empty: a connection check)"


def count_statements() -> None:
    """Count, while ``ON``, each statement psycopg's async connections send."""
    import psycopg
    from psycopg._connection_base import BaseConnection

    execute = psycopg.AsyncCursor.execute
    exec_command = BaseConnection._exec_command

    async def counted_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if ON[0]:
            tag = "pipelined: " if self._conn._pipeline else ""
            COUNTS[tag + _label(query)] += 1
            TRACE.append(f"{id(self._conn) % 10000:4d} {tag}{_label(query)}")
        return await execute(self, query, *args, **kwargs)

    def counted_command(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        if ON[0]:
            tag = "pipelined: " if self._pipeline else ""
            COUNTS[tag + _label(command)] += 1
            TRACE.append(f"{id(self) % 10000:4d} {tag}{_label(command)}")
        return exec_command(self, command, *args, **kwargs)

    psycopg.AsyncCursor.execute = counted_execute  # type: ignore[method-assign]
    BaseConnection._exec_command = counted_command  # type: ignore[method-assign]


async def drive(dsn: str, runs: int, concurrency: int, warmup: int, prof: Any) -> float:
    q = AgentQueue(queue.agents, dsn, pool_size=queue.pool_size)
    await q.startup()
    try:
        rows = [
            {"run_id": f"warm-{i}", "input": "go", "session_id": f"w-{i}"} for i in range(warmup)
        ]
        await q.submit_many(rows)
        await q.run_worker(concurrency=concurrency, wait=False, install_signal_handlers=False)
        rows = [{"run_id": f"run-{i}", "input": "go", "session_id": f"c-{i}"} for i in range(runs)]
        await q.submit_many(rows)
        ON[0] = True
        pg0 = cpu_s(backends(dsn))
        t0, cpu0 = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.enable()
        await q.run_worker(concurrency=concurrency, wait=False, install_signal_handlers=False)
        if prof is not None:
            prof.disable()
        elapsed = time.perf_counter() - t0
        CPU[0] = time.process_time() - cpu0
        ON[0] = False
        PG_CPU[0] = cpu_ms_per_run(pg0, cpu_s(backends(dsn)), runs)
    finally:
        await q.shutdown()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default=os.environ.get("LOVIA_TEST_POSTGRES_DSN", ""))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--profile", type=int, default=0, help="show the N costliest functions")
    ap.add_argument("--sort", default="cumulative", help="the profile's order (tottime...)")
    ap.add_argument("--no-count", action="store_true", help="CPU time without the counting")
    ap.add_argument("--trace", action="store_true", help="list the statements in order")
    ap.add_argument("--quick", action="store_true", help="a tiny run that only shows it works")
    args = ap.parse_args()
    if not args.dsn:
        print(json.dumps({"skipped": "no --dsn or LOVIA_TEST_POSTGRES_DSN"}))
        return
    if args.quick:
        args.runs, args.warmup = 10, 2
    import logging

    logging.disable(logging.WARNING)
    if not args.no_count:
        count_statements()
    # CPU time, not wall time: on a shared machine a send to the local server often hands the
    # core to it, and wall time would charge that to the send
    prof = cProfile.Profile(time.process_time) if args.profile else None
    schema, dsn = with_schema(args.dsn)
    try:
        elapsed = asyncio.run(drive(dsn, args.runs, args.concurrency, args.warmup, prof))
    finally:
        drop_schema(args.dsn, schema)
    direct = {k: v for k, v in COUNTS.items() if not k.startswith("pipelined: ")}
    report: dict[str, Any] = {
        "runs": args.runs,
        "concurrency": args.concurrency,
        "runs_per_s": round(args.runs / elapsed, 1),
        "worker_cpu_ms_per_run": round(CPU[0] * 1000 / args.runs, 2),
        "postgres_cpu_ms_per_run": PG_CPU[0],
        "round_trips_per_run": round(sum(direct.values()) / args.runs, 2),
        "pipelined_statements_per_run": round(
            sum(v for k, v in COUNTS.items() if k.startswith("pipelined: ")) / args.runs, 2
        ),
        "statements_per_run": {
            k: round(v / args.runs, 2) for k, v in COUNTS.most_common() if v >= args.runs / 20
        },
    }
    if args.trace:
        report["trace"] = TRACE
    if prof is not None:
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out).sort_stats(args.sort)
        stats.print_stats(args.profile)
        report["profile"] = out.getvalue().splitlines()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
