"""What SQLite checkpointing costs per step, and whether that cost stays flat: prints JSON.

    python benchmarks/checkpoint_cost.py [--quick]

For runs of 10, 100 and 1,000 tool-call steps (one model turn asking for one tool call, then
its result: two checkpoint saves per step) it times the same run with no checkpointer and
with ``SQLiteCheckpointer`` (default journal and ``wal=True``), in one process, interleaved,
median of several repeats. The model is a minimal in-process provider and the context policy
is a no-op, so the baseline is the loop itself and the difference is the checkpointing.

Figures: seconds with and without, per-step overhead (ms), overhead growth (per-step overhead
of the longest run / that of the 10-step run; target <= 1.2), database bytes next to the
run's entries as one JSON array (target <= 2x), and the time to replay the completed run
(target < 50 ms at 1,000 steps). ``--quick`` (for CI) runs fewer steps and repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from lovia import (
    Agent,
    CheckpointOptions,
    RunHead,
    Runner,
    RunResult,
    SQLiteCheckpointer,
    ToolCallEntry,
    TranscriptEntry,
    tool,
)
from lovia.context import NoopContextPolicy
from lovia.transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    ModelDelta,
    UsageDelta,
    entries_to_json,
)
from lovia.usage import Usage


class StepModel:
    """Asks for ``steps`` tool calls, one per turn, then answers; O(1) per call."""

    name = "bench"
    model = "steps"
    supports_json_schema = False

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.turn = 0

    async def stream(
        self, entries: Sequence[TranscriptEntry], **_: Any
    ) -> AsyncIterator[ModelDelta]:
        self.turn += 1
        if self.turn <= self.steps:
            args = json.dumps({"n": self.turn, "note": "measure the cost of one saved step"})
            entry: TranscriptEntry = ToolCallEntry(
                call_id=f"call_{self.turn}", name="step", arguments=args
            )
        else:
            entry = AssistantTextEntry(content=f"finished {self.steps} steps")
        yield EntryCompletedDelta(entry)
        yield UsageDelta(Usage(input_tokens=100, output_tokens=20))
        yield FinishDelta("tool_calls" if self.turn <= self.steps else "stop")


@tool
async def step(n: int, note: str) -> str:
    """One unit of work."""
    return f"step {n} done: {note}"


def agent_for(steps: int) -> Agent:
    return Agent("bench", model=StepModel(steps), tools=[step], context_policy=NoopContextPolicy())


async def timed_run(steps: int, checkpoint: CheckpointOptions | None) -> tuple[float, RunResult]:
    agent = agent_for(steps)
    start = time.perf_counter()
    result = await Runner.run(agent, "go", max_turns=steps + 2, checkpoint=checkpoint)
    return time.perf_counter() - start, result


def file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


class Samples:
    """Timings of one run length, gathered over several rounds."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.plain: list[float] = []
        self.saved: list[float] = []
        self.replay: list[float] = []

    async def add(self, cp: SQLiteCheckpointer, run_id: str) -> None:
        """One run without and one with ``cp`` (one long-lived store, as a worker has)."""
        seconds, _ = await timed_run(self.steps, None)
        self.plain.append(seconds)
        seconds, result = await timed_run(self.steps, CheckpointOptions(cp, run_id))
        self.saved.append(seconds)
        start = time.perf_counter()
        again = await Runner.run(
            agent_for(self.steps), "go", checkpoint=CheckpointOptions(cp, run_id)
        )
        self.replay.append(time.perf_counter() - start)
        assert again.replayed and again.entries == result.entries

    def figures(self) -> dict[str, Any]:
        base, with_cp = statistics.median(self.plain), statistics.median(self.saved)
        return {
            "steps": self.steps,
            "repeats": len(self.plain),
            "seconds_without_checkpoint": round(base, 5),
            "seconds_with_checkpoint": round(with_cp, 5),
            "per_step_overhead_ms": round((with_cp - base) / self.steps * 1e3, 4),
            "replay_ms": round(statistics.median(self.replay) * 1e3, 3),
        }


async def timings(cp: SQLiteCheckpointer, per_round: dict[int, int], rounds: int) -> list[Any]:
    """Round-robin over the run lengths, so a machine that gets busier mid-way slows every
    length alike instead of skewing the growth figure."""
    samples = {n: Samples(n) for n in per_round}
    for r in range(rounds):
        for n, count in per_round.items():
            for i in range(count):
                await samples[n].add(cp, f"run-{n}-{r}-{i}")
    return [s.figures() for s in samples.values()]


async def sizes(steps: int, tmp: Path, empty: int) -> dict[str, Any]:
    """The file after one run of ``steps`` steps, next to that run's entries as JSON."""
    path = tmp / f"size-{steps}.db"
    async with SQLiteCheckpointer(path) as cp:
        _, result = await timed_run(steps, CheckpointOptions(cp, "run"))
    db, as_json = file_bytes(path), len(entries_to_json(result.entries))
    return {
        "db_bytes": db,
        "empty_db_bytes": empty,
        "entries_json_bytes": as_json,
        "db_to_json": round(db / as_json, 2),
        "db_growth_to_json": round((db - empty) / as_json, 2),
    }


async def empty_db_bytes(tmp: Path) -> int:
    path = tmp / "empty.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.load("nothing")  # creates the schema
    return file_bytes(path)


async def main(quick: bool) -> dict[str, Any]:
    steps = [10, 100] if quick else [10, 100, 1000]
    per_round = {10: 10, 100: 2} if quick else {10: 10, 100: 3, 1000: 1}
    out: dict[str, Any] = {"quick": quick}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        await timed_run(20, None)  # warm caches (schemas, adapters)
        # fsync per commit makes the default journal slow: fewer rounds there
        for mode, wal, rounds in (("sqlite_wal", True, 3), ("sqlite_default_journal", False, 1)):
            async with SQLiteCheckpointer(tmp / f"{mode}.db", wal=wal) as cp:
                await cp.append("warm-up", [], RunHead("bench"))  # open + first write untimed
                rows = await timings(cp, per_round, 1 if quick else rounds)
            first, last = rows[0]["per_step_overhead_ms"], rows[-1]["per_step_overhead_ms"]
            out[mode] = {
                "runs": rows,
                "overhead_growth": round(last / first, 2) if first > 0 else None,
            }
        empty = await empty_db_bytes(tmp)
        out["storage"] = {str(n): await sizes(n, tmp, empty) for n in steps}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer steps and repeats, for CI")
    print(json.dumps(asyncio.run(main(parser.parse_args().quick)), indent=2))
