"""How a SQLite session's cost grows with its history. Prints JSON; asserts nothing.

Run: python benchmarks/session_growth.py [--quick] [--wal] [--profile]

The session grows to 100, 1,000 and 3,000 prior runs (each: a user input, one tool call with
a ~1 KB result, a final text). At each size it times one more run through ``Runner.run``
(load the history, two scripted model calls, one tool, append the segment) on a store that
has served the session before. At the largest size it also times ``load()`` on a fresh
store (nothing decoded yet, as in a new process) and on a warm one, a first run on a fresh
store, and the longest event-loop stall during a cold load (decoding runs on the store's
thread). Targets: the largest "one more run" at most 10x the smallest, and ``load()`` of
3,000 runs under 100 ms. ``--quick`` uses 10/100/300 runs.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lovia import (
    Agent,
    AssistantTextEntry,
    InputEntry,
    Runner,
    SQLiteSession,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    tool,
)
from lovia.testing import ScriptedProvider, call, text

RESULT = ("lorem ipsum dolor sit amet " * 40)[:1024]


@tool
def lookup(q: str) -> str:
    """Look something up (returns ~1 KB)."""
    return RESULT


def prior_run(n: int) -> list[TranscriptEntry]:
    return [
        InputEntry(role="user", content=f"question number {n}: what does the report say?"),
        ToolCallEntry(call_id=f"call_{n}", name="lookup", arguments=f'{{"q": "item {n}"}}'),
        ToolResultEntry(call_id=f"call_{n}", output=RESULT),
        AssistantTextEntry(content=f"The report says item {n} is fine."),
    ]


async def one_more_run(session: SQLiteSession, sid: str) -> float:
    model = ScriptedProvider([call("lookup", {"q": "next"}), text("It is fine.")])
    agent = Agent("bench", model=model, tools=[lookup])
    start = time.perf_counter()
    await Runner.run(agent, "and the next item?", session=session, session_id=sid)
    return time.perf_counter() - start


async def timed_load(session: SQLiteSession, sid: str) -> float:
    start = time.perf_counter()
    await session.load(sid)
    return time.perf_counter() - start


async def cold(path: Path, wal: bool, sid: str, what: str) -> float:
    """The first load (or run) of a fresh store on the file, as in a new process."""
    async with SQLiteSession(path, wal=wal) as fresh:
        await fresh.list_sessions()  # open the file and check the schema outside the timing
        if what == "load":
            return await timed_load(fresh, sid)
        return await one_more_run(fresh, sid)


async def longest_stall(job: Any) -> float:
    """The longest the event loop went without running a 1 ms ticker while ``job`` ran."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    await job
    done.set()
    await task
    return max(gaps, default=0.0)


async def cold_stall(path: Path, wal: bool, sid: str) -> float:
    async with SQLiteSession(path, wal=wal) as fresh:
        await fresh.list_sessions()
        return await longest_stall(fresh.load(sid))


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 3)


async def measure(sizes: list[int], repeats: int, wal: bool, path: Path) -> dict[str, Any]:
    sid = "bench"
    runs: dict[str, float] = {}
    async with SQLiteSession(path, wal=wal) as session:
        stored = 0
        for size in sizes:
            while stored < size:
                await session.append(sid, prior_run(stored), run_id=f"prior-{stored}")
                stored += 1
            await one_more_run(session, sid)  # warm caches at this size
            samples = [await one_more_run(session, sid) for _ in range(repeats)]
            stored += repeats + 1
            runs[str(size)] = median_ms(samples)
        load_samples = [await timed_load(session, sid) for _ in range(repeats)]
        entries = len(await session.load(sid))
    cold_loads = [await cold(path, wal, sid, "load") for _ in range(repeats)]
    cold_runs = [await cold(path, wal, sid, "run") for _ in range(repeats)]
    stalls = [await cold_stall(path, wal, sid) for _ in range(repeats)]
    size_bytes = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    smallest, largest = str(sizes[0]), str(sizes[-1])
    return {
        "benchmark": "session_growth",
        "wal": wal,
        "repeats": repeats,
        "one_more_run_ms": runs,
        "growth_ratio": round(runs[largest] / runs[smallest], 2),
        "growth_target": 10,
        f"load_{largest}_runs_ms": median_ms(cold_loads),
        "load_target_ms": 100,
        f"load_{largest}_runs_cached_ms": median_ms(load_samples),
        f"first_run_of_a_new_store_at_{largest}_ms": median_ms(cold_runs),
        "longest_event_loop_stall_during_cold_load_ms": median_ms(stalls),
        "entries_loaded": entries,
        "database_bytes": size_bytes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--wal", action="store_true", help="open the session with wal=True")
    parser.add_argument("--profile", action="store_true", help="print a profile to stderr")
    args = parser.parse_args()
    sizes = [10, 100, 300] if args.quick else [100, 1_000, 3_000]
    repeats = 3 if args.quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sessions.db"
        job = measure(sizes, repeats, args.wal, path)
        if args.profile:
            profiler = cProfile.Profile()
            report = profiler.runcall(asyncio.run, job)
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
        else:
            report = asyncio.run(job)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
