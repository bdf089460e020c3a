"""What replaying a completed checkpointed run costs, each time with a fresh store: prints JSON.

    python benchmarks/replay.py [--quick] [--steps 100] [--reps 200]

A run of ``steps`` tool calls (each returning ~1 KB) is checkpointed into a SQLite file with
the default journal, then re-issued ``reps`` times with the same ``run_id``, each time through
a new ``SQLiteCheckpointer`` on the file, as a restarted worker or a web request would: the
answer comes from the file, without the model or the tools. The figure is the time of one
``Runner.run`` (median and minimum, ms); ``--quick`` (for CI) runs 10 steps, 20 times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, tool
from lovia.context import NoopContextPolicy
from lovia.testing import ScriptedProvider, call, text

DOC = "x" * 1024


@tool
def fetch(i: int) -> str:
    """Fetch a ~1 KB document by index."""
    return f"[{i:08d}]" + DOC[10:]


def agent(steps: int) -> Agent:
    script = [call("fetch", {"i": k}, call_id=f"c{k}") for k in range(steps)]
    return Agent(
        name="bench",
        instructions="Use the fetch tool, then answer.",
        model=ScriptedProvider([*script, text("done")]),
        tools=[fetch],
        context_policy=NoopContextPolicy(),
    )


async def measure(steps: int, reps: int, warmup: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "replay.db"
        store = SQLiteCheckpointer(path)  # not closed, so the same code runs on lovia 0.9.119
        first = await Runner.run(
            agent(steps), "go", max_turns=steps + 5, checkpoint=CheckpointOptions(store, "r")
        )
        times = []
        for k in range(warmup + reps):
            store = SQLiteCheckpointer(path)  # a fresh store object each time
            started = time.perf_counter()
            result = await Runner.run(agent(0), "ignored", checkpoint=CheckpointOptions(store, "r"))
            took = time.perf_counter() - started
            assert result.output == "done" and len(result.entries) == len(first.entries)
            if k >= warmup:
                times.append(took * 1e3)
        return {
            "steps": steps,
            "entries": len(first.entries),
            "reps": reps,
            "replay_ms_median": round(statistics.median(times), 3),
            "replay_ms_min": round(min(times), 3),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="10 steps, 20 replays")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args()
    steps, reps = (10, 20) if args.quick else (args.steps, args.reps)
    print(json.dumps({"replay": asyncio.run(measure(steps, reps, warmup=5))}, indent=1))


if __name__ == "__main__":
    main()
