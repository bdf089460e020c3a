"""What one SQLite store call costs from the event loop, and how long the loop stalls: JSON.

    python benchmarks/sqlite_calls.py [--quick]

Per-call microseconds (median of batches) for a no-op read, a checkpoint save (``wal=True``
and the default journal), loading a 100-entry run, and an ``InMemoryCheckpointer`` save; a
short call runs on the loop's own thread, so these are mostly SQLite's own cost. Then the
loop's longest stall (the biggest gap between ticks of a concurrent task) while a session
of 10,000 entries is read the first time (on a thread) and again (cached, on the loop).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lovia import InMemoryCheckpointer, RunHead, SQLiteCheckpointer, SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry, TranscriptEntry


def _noop(conn: Any) -> None:
    return None


async def per_call_us(call: Callable[[], Awaitable[Any]], calls: int, batches: int) -> float:
    times = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(calls):
            await call()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return round(statistics.median(times), 1)


async def call_costs(tmp: Path, calls: int, batches: int) -> dict[str, float]:
    out: dict[str, float] = {}
    entry = [InputEntry(role="user", content="one saved step " * 10)]
    for name, wal in (("wal", True), ("default_journal", False)):
        async with SQLiteCheckpointer(tmp / f"{name}.db", wal=wal) as cp:
            await cp.append("r", entry * 100, RunHead("a"))  # opened, and a 100-entry run
            out[f"{name}_noop_read_us"] = await per_call_us(
                lambda: cp._db.read(_noop), calls, batches
            )
            out[f"{name}_load_100_entries_us"] = await per_call_us(
                lambda: cp.load("r"), calls, batches
            )
            saves = calls if wal else max(3, calls // 20)  # the default journal syncs the disk
            out[f"{name}_save_us"] = await per_call_us(
                lambda: cp.append("s", entry, RunHead("a")), saves, batches
            )
    memory = InMemoryCheckpointer()
    head = RunHead("a", context_state={"summary": ["x"] * 10}, budget={"tokens": 10})
    out["in_memory_save_us"] = await per_call_us(
        lambda: memory.append("r", entry, head), calls, batches
    )
    return out


async def with_longest_stall(call: Awaitable[Any]) -> tuple[float, float]:
    """Seconds ``call`` took, and the longest gap between ticks of a concurrent task."""
    gaps: list[float] = []
    running = True

    async def tick() -> None:
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    start = time.perf_counter()
    await call
    took = time.perf_counter() - start
    running = False
    await ticker
    return took, max(gaps, default=0.0)


async def stalls(tmp: Path, runs: int) -> dict[str, Any]:
    path = tmp / "session.db"
    async with SQLiteSession(path, wal=True) as writer:
        for run in range(runs):
            entries: list[TranscriptEntry] = [
                InputEntry(role="user", content=f"question {run}.{i} " * 10)
                if i % 2 == 0
                else AssistantTextEntry(content=f"answer {run}.{i} " * 20)
                for i in range(100)
            ]
            await writer.append("long", entries, run_id=f"run-{run}")
    out: dict[str, Any] = {"entries": runs * 100}
    async with SQLiteSession(path, wal=True) as reader:
        await reader.load("other")  # opened
        for label in ("first_read", "cached_read"):
            took, stall = await with_longest_stall(reader.load("long"))
            out[f"{label}_ms"] = round(took * 1e3, 2)
            out[f"{label}_longest_loop_stall_ms"] = round(stall * 1e3, 2)
    return out


async def main(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        calls, batches = (50, 3) if quick else (500, 7)
        return {
            "quick": quick,
            "per_call": await call_costs(tmp, calls, batches),
            "long_session": await stalls(tmp, 10 if quick else 100),
        }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer calls, for CI")
    print(json.dumps(asyncio.run(main(parser.parse_args().quick)), indent=2))
