"""Framework overhead per run with the scripted model (no I/O): prints JSON.

    python benchmarks/overhead.py [--runs 300] [--quick]

(a) one text turn; (b) one tool call + final text. Each figure is the median of ``--runs``
runs, in microseconds, next to a baseline measured in the same process (a bare
``asyncio`` task doing the same awaits the scripted model does), so a noisy machine shows up
in the baseline too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable

from lovia import Agent, Runner, tool
from lovia.testing import ScriptedProvider, call, text


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def add_sync(a: int, b: int) -> int:
    """Add two integers (a sync tool: runs in a worker thread)."""
    return a + b


async def _median_us(make: Callable[[], Awaitable[object]], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await make()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


async def _baseline() -> None:
    async def gen() -> object:
        for i in range(6):
            yield i

    async for _ in gen():
        pass
    await asyncio.ensure_future(asyncio.sleep(0))


async def main(runs: int) -> dict[str, float]:
    agent = Agent("bench", instructions="Be brief.", tools=[add, add_sync])

    def text_run() -> Awaitable[object]:
        return Runner.run(agent.clone(model=ScriptedProvider([text("hi")])), "hello")

    def tool_run() -> Awaitable[object]:
        model = ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")])
        return Runner.run(agent.clone(model=model), "1+2?")

    def sync_tool_run() -> Awaitable[object]:
        model = ScriptedProvider([call("add_sync", {"a": 1, "b": 2}), text("3")])
        return Runner.run(agent.clone(model=model), "1+2?")

    for fn in (text_run, tool_run, sync_tool_run):  # warm caches (schemas, adapters)
        await _median_us(fn, 20)
    return {
        "runs": runs,
        "baseline_us": round(await _median_us(_baseline, runs), 1),
        "one_text_turn_us": round(await _median_us(text_run, runs), 1),
        "one_tool_call_plus_text_us": round(await _median_us(tool_run, runs), 1),
        "one_sync_tool_call_plus_text_us": round(await _median_us(sync_tool_run, runs), 1),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="30 runs, for CI")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(30 if args.quick else args.runs)), indent=2))
