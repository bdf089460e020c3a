"""Agent runs through the PostgreSQL queue (``lovia worker`` processes) against the same
workload on LangGraph with its PostgreSQL checkpointer, in one run; prints JSON.

    python benchmarks/queue_throughput.py --runs 2000 --workers 1,2,4,8

Workload: each run is its own conversation (a session, a LangGraph thread) with one scripted
tool call and a final answer, checkpointed at every step; the model is
``lovia.testing.ScriptedProvider``. For each worker count W, in a fresh schema:

- lovia: W ``lovia worker`` processes (``--concurrency C``) are started and registered, then
  the runs are submitted ``--batch`` per transaction (``submit_many``; ``--batch 1``: one
  ``submit`` each); runs/s is runs over the span from the first start to the last finish
  (database clock);
- latency: with the workers idle, ``--latency-runs`` runs are submitted one at a time, each
  once the one before it has finished (and ``--gap`` seconds more); enqueue-to-start is
  ``started_at - submitted_at``. The burst's own enqueue-to-start (runs waiting their turn)
  is reported apart;
- LangGraph (``pip install langgraph langgraph-checkpoint-postgres``; not a lovia
  dependency): W processes, each running its share of the runs C at a time through a graph
  model -> tool -> model with ``AsyncPostgresSaver``; LangGraph has no queue, so its runs
  are handed out up front (no enqueue, no latency figure).

``lovia_over_langgraph`` is the runs/s ratio at each W.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from lovia import Agent, RunContext, ToolResultEntry, TranscriptEntry, tool  # noqa: E402
from lovia.messages import AssistantTurn  # noqa: E402
from lovia.testing import ScriptedProvider, call, text  # noqa: E402
from lovia.transcript import InputEntry  # noqa: E402
from lovia.workers import AgentQueue  # noqa: E402


class OneTool:
    """ScriptedProvider turns chosen by the transcript: a tool call, then the answer."""

    name = model = "one-tool"
    supports_json_schema = False

    async def stream(self, entries: Sequence[TranscriptEntry], **kwargs: Any) -> AsyncIterator[Any]:
        start = max(
            (i for i, e in enumerate(entries) if isinstance(e, InputEntry) and e.role == "user"),
            default=0,
        )
        done = any(isinstance(e, ToolResultEntry) for e in entries[start:])
        turn: AssistantTurn = text("done") if done else call("lookup", {"q": "x"}, call_id="c1")
        async for delta in ScriptedProvider([turn]).stream(entries, **kwargs):
            yield delta


@tool
async def lookup(ctx: RunContext[Any], q: str) -> str:
    """Look q up."""
    return f"found {q}"


# the app of the worker processes: lovia worker --app queue_throughput:queue --db DSN
queue = AgentQueue(
    Agent("bench", model=OneTool(), tools=[lookup]),  # type: ignore[arg-type]
    os.environ.get("LOVIA_BENCH_DSN", "postgresql://unset"),
    pool_size=4,  # 8 worker processes stay within PostgreSQL's default 100 connections
)


def schema_dsn(dsn: str, schema: str) -> str:
    """``dsn`` in ``schema``, its connections named after it (their server CPU is counted)."""
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options={quote(f'-csearch_path={schema}')}&application_name={schema}"


def backends(dsn: str) -> list[int]:
    """The pids of the server processes of ``dsn``'s connections (named after its schema)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        name = conn.execute("SHOW application_name").fetchone()
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND pid <> "
            "pg_backend_pid()",
            (name[0] if name else "",),
        ).fetchall()
    return [int(r[0]) for r in rows]


def cpu_s(pids: Sequence[int]) -> dict[int, float]:
    """CPU seconds (user + system) each of these processes used so far, from /proc (the
    server on this host); a pid that is gone or unreadable is left out."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / tick
    return out


def cpu_ms_per_run(before: dict[int, float], after: dict[int, float], runs: int) -> float:
    used = sum(v - before.get(pid, 0.0) for pid, v in after.items())
    return round(used * 1000 / runs, 2)


def with_schema(dsn: str) -> tuple[str, str]:
    import psycopg

    schema = f"bench{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return schema, schema_dsn(dsn, schema)


def drop_schema(dsn: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def q1(dsn: str, sql: str) -> Any:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql).fetchone()
    return row[0] if row else None


DONE = "SELECT count(*) FROM lovia_queue_runs WHERE state = 'completed'"


async def at_least(watch: Any, count_sql: str, n: int) -> int:
    """Wait until ``count_sql`` counts ``n`` on ``watch`` (an open autocommit connection:
    a connection per look would start a server process each time, in the very window the
    latency runs measure); returns the count."""
    while True:
        cur = await watch.execute(count_sql)
        row = await cur.fetchone()
        got = int(row[0] if row else 0)
        if got >= n:
            return got
        await asyncio.sleep(0.05)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def lovia_round(
    dsn: str, runs: int, workers: int, conc: int, lat_runs: int, gap: float, batch: int = 50
) -> Any:
    import psycopg

    bench = AgentQueue(queue.agents, dsn, pool_size=2)
    await bench.startup()
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'benchmarks'}:{ROOT / 'src'}",
        "LOVIA_BENCH_DSN": dsn,
    }
    procs = [
        subprocess.Popen(  # noqa: ASYNC220 - started once, before the clock
            [
                sys.executable,
                "-m",
                "lovia",
                "worker",
                "--app",
                "queue_throughput:queue",
                "--db",
                dsn,
                "--concurrency",
                str(conc),
                "--quiet",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    watch = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    try:
        await at_least(watch, "SELECT count(*) FROM procrastinate_workers", workers)
        # latency: idle workers, one run at a time, each after the one before has finished
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            for i in range(lat_runs):
                async with conn.transaction():
                    await bench.submit(f"lat-{i}", "go", session_id=f"lat-{i}", conn=conn)
                await at_least(watch, DONE, i + 1)
                await asyncio.sleep(gap)
        # throughput: a burst of runs; the CPU its processes and their server processes use
        pids = [p.pid for p in procs]
        cpu0, pg0 = cpu_s(pids), cpu_s(backends(dsn))
        t0 = time.perf_counter()
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            for first in range(0, runs, batch):
                chunk = [
                    {"run_id": f"run-{i}", "input": "go", "session_id": f"conv-{i}"}
                    for i in range(first, min(runs, first + batch))
                ]
                async with conn.transaction():
                    if batch == 1:
                        await bench.submit(**chunk[0], conn=conn)
                    else:
                        await bench.submit_many(chunk, conn=conn)
        submit_s = time.perf_counter() - t0
        done = await at_least(watch, DONE, runs + lat_runs)
        cpu1, pg1 = cpu_s(pids), cpu_s(backends(dsn))
        span = q1(
            dsn,
            "SELECT extract(epoch FROM max(updated_at) - min(started_at)) FROM lovia_queue_runs "
            "WHERE run_id LIKE 'run-%'",
        )
        import psycopg as pg

        with pg.connect(dsn) as c:
            lat = [
                float(r[0]) * 1000
                for r in c.execute(
                    "SELECT extract(epoch FROM started_at - submitted_at) FROM lovia_queue_runs "
                    "WHERE run_id LIKE 'lat-%'"
                ).fetchall()
            ]
            burst = [
                float(r[0]) * 1000
                for r in c.execute(
                    "SELECT extract(epoch FROM started_at - submitted_at) FROM lovia_queue_runs "
                    "WHERE run_id LIKE 'run-%'"
                ).fetchall()
            ]
            twice = c.execute(
                "SELECT count(*) FROM lovia_queue_runs WHERE attempts <> 1"
            ).fetchone()
    finally:
        await watch.close()
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=60)
        await bench.shutdown()
    return {
        "runs": runs,
        "runs_per_s": round(runs / float(span), 1),
        "submit_runs_per_s": round(runs / submit_s, 1),
        "enqueue_to_start_ms_idle": {
            "p50": round(pct(lat, 50), 2),
            "p99": round(pct(lat, 99), 2),
            "n": len(lat),
        },
        "enqueue_to_start_ms_burst": {
            "p50": round(pct(burst, 50), 1),
            "p99": round(pct(burst, 99), 1),
        },
        "worker_cpu_ms_per_run": cpu_ms_per_run(cpu0, cpu1, runs),
        "postgres_cpu_ms_per_run": cpu_ms_per_run(pg0, pg1, runs),
        "runs_not_on_first_attempt": twice[0] if twice else None,
        "completed": done,
    }


# -- LangGraph ---------------------------------------------------------------------------


class LGState(TypedDict):
    messages: list[dict[str, Any]]


async def lg_model(state: LGState) -> LGState:
    """The model node: the same ScriptedProvider turns as lovia's side, streamed."""
    done = any(m["role"] == "tool" for m in state["messages"])
    turn = text("done") if done else call("lookup", {"q": "x"}, call_id="c1")
    async for _ in ScriptedProvider([turn]).stream([]):
        pass
    msg = {"role": "assistant", "tool": None if done else "lookup"}
    return {"messages": [*state["messages"], msg]}


async def lg_tools(state: LGState) -> LGState:
    return {"messages": [*state["messages"], {"role": "tool", "content": "found x"}]}


def _lg_process(
    dsn: str, ids: list[str], conc: int, ready: Any, go: Any, done: Any, leave: Any
) -> None:
    asyncio.run(_lg_main(dsn, ids, conc, ready, go, done, leave))


async def _lg_main(
    dsn: str, ids: list[str], conc: int, ready: Any, go: Any, done: Any, leave: Any
) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.graph import END, START, StateGraph
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    def route(state: LGState) -> str:
        return "tools" if state["messages"][-1].get("tool") else END

    g = StateGraph(LGState)
    g.add_node("model", lg_model)
    g.add_node("tools", lg_tools)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", route, ["tools", END])
    g.add_edge("tools", "model")
    async with AsyncConnectionPool(
        dsn,
        max_size=conc,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=False,
    ) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
        graph = g.compile(checkpointer=saver)
        ready.release()
        go.wait()
        sem = asyncio.Semaphore(conc)

        async def one(rid: str) -> None:
            async with sem:
                out = await graph.ainvoke(
                    {"messages": [{"role": "user", "content": "go"}]},
                    {"configurable": {"thread_id": rid}},
                )
                assert out["messages"][-1]["role"] == "assistant"

        await asyncio.gather(*(one(r) for r in ids))
        done.release()
        leave.wait()  # its CPU and its connections' are read meanwhile


def langgraph_round(dsn: str, runs: int, workers: int, conc: int) -> Any:
    async def setup() -> None:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(dsn) as saver:
            await saver.setup()

    asyncio.run(setup())
    ctx = mp.get_context("spawn")
    ready, go, done, leave = ctx.Semaphore(0), ctx.Event(), ctx.Semaphore(0), ctx.Event()
    ids = [f"run-{i}" for i in range(runs)]
    procs = [
        ctx.Process(target=_lg_process, args=(dsn, ids[w::workers], conc, ready, go, done, leave))
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    for _ in procs:
        if not ready.acquire(timeout=120):
            for p in procs:
                p.kill()
            raise RuntimeError("a LangGraph process did not start")
    pids = [p.pid for p in procs if p.pid is not None]
    cpu0, pg0 = cpu_s(pids), cpu_s(backends(dsn))
    t0 = time.perf_counter()
    go.set()
    for _ in procs:
        done.acquire()
    elapsed = time.perf_counter() - t0
    cpu1, pg1 = cpu_s(pids), cpu_s(backends(dsn))
    leave.set()
    for p in procs:
        p.join()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    threads = q1(dsn, "SELECT count(DISTINCT thread_id) FROM checkpoints")
    return {
        "runs": runs,
        "runs_per_s": round(runs / elapsed, 1),
        "worker_cpu_ms_per_run": cpu_ms_per_run(cpu0, cpu1, runs),
        "postgres_cpu_ms_per_run": cpu_ms_per_run(pg0, pg1, runs),
        "threads_checkpointed": threads,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", default=os.environ.get("LOVIA_TEST_POSTGRES_DSN", ""))
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--workers", default="1,2,4,8")
    ap.add_argument("--concurrency", type=int, default=8, help="runs at once per process")
    ap.add_argument("--latency-runs", type=int, default=100)
    ap.add_argument("--gap", type=float, default=0.02)
    ap.add_argument("--batch", type=int, default=50, help="runs submitted per transaction")
    ap.add_argument("--skip-langgraph", action="store_true")
    ap.add_argument("--quick", action="store_true", help="a tiny run that only shows it works")
    args = ap.parse_args()
    if not args.dsn:
        if args.quick:
            print(json.dumps({"skipped": "no --dsn or LOVIA_TEST_POSTGRES_DSN"}))
            return
        sys.exit("set --dsn or LOVIA_TEST_POSTGRES_DSN")
    if args.quick:  # a few runs on one worker; LangGraph only when it is installed
        args.runs, args.workers, args.latency_runs = 20, "1", 5
        args.skip_langgraph = args.skip_langgraph or importlib.util.find_spec("langgraph") is None
    import logging

    logging.disable(logging.WARNING)
    report: dict[str, Any] = {
        "runs": args.runs,
        "concurrency_per_process": args.concurrency,
        "submit_batch": args.batch,
        "cpus": os.cpu_count(),
        "rounds": [],
    }
    for w in [int(x) for x in args.workers.split(",")]:
        row: dict[str, Any] = {"workers": w, "load_average_1m": round(os.getloadavg()[0], 1)}
        schema, dsn = with_schema(args.dsn)
        try:
            row["lovia"] = asyncio.run(
                lovia_round(
                    dsn, args.runs, w, args.concurrency, args.latency_runs, args.gap, args.batch
                )
            )
        finally:
            drop_schema(args.dsn, schema)
        if not args.skip_langgraph:
            schema, dsn = with_schema(args.dsn)
            try:
                row["langgraph"] = langgraph_round(dsn, args.runs, w, args.concurrency)
            finally:
                drop_schema(args.dsn, schema)
            row["lovia_over_langgraph"] = round(
                row["lovia"]["runs_per_s"] / row["langgraph"]["runs_per_s"], 2
            )
        report["rounds"].append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
