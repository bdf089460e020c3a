"""How long the default context policy takes to render one model call's view.

Prints JSON. For transcripts of 1,000 and 10,000 entries it times ``Compaction.prepare`` in
the steady state, with and without an archiving store: the first turn's decisions are made,
then each timed turn appends one tool call and its result, as a real run does, and passes the
returned state back. The baseline is
``NoopContextPolicy`` over the same transcripts, so ``ratio_to_noop`` is machine-independent.

    python benchmarks/context_view.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from lovia.context import (
    Compaction,
    ContextPolicy,
    ContextRequest,
    InMemoryResultStore,
    NoopContextPolicy,
)
from lovia.context.tokens import entry_tokens
from lovia.testing import ScriptedProvider
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry


def transcript(n: int) -> list[TranscriptEntry]:
    entries: list[TranscriptEntry] = [
        InputEntry(role="system", content="You are a careful assistant."),
        InputEntry(role="user", content="Read every page and tell me what changed."),
    ]
    i = 0
    while len(entries) < n:
        entries.append(ToolCallEntry(call_id=f"c{i}", name="fetch", arguments=f'{{"n": {i}}}'))
        body = f"page {i}: " + "lorem ipsum dolor sit amet " * (30 if i % 50 else 200)
        entries.append(ToolResultEntry(call_id=f"c{i}", output=body))
        i += 1
    return entries


def next_pair(i: int) -> list[TranscriptEntry]:
    return [
        ToolCallEntry(call_id=f"n{i}", name="fetch", arguments=f'{{"n": {i}}}'),
        ToolResultEntry(call_id=f"n{i}", output=f"new page {i}: " + "fresh text " * 20),
    ]


async def steady_ms(policy: ContextPolicy, n: int, turns: int) -> dict[str, Any]:
    entries = transcript(n)
    provider = ScriptedProvider()
    state: dict[str, Any] = {}
    view = await policy.prepare(ContextRequest(list(entries), state, provider))  # decisions
    state = view.state
    times = []
    for t in range(turns):
        entries.extend(next_pair(t))
        request = ContextRequest(list(entries), state, provider, reported_input_tokens=None)
        start = time.perf_counter()
        view = await policy.prepare(request)
        times.append((time.perf_counter() - start) * 1000)
        state = view.state
    return {
        "median_ms": round(statistics.median(times), 3),
        "max_ms": round(max(times), 3),
        "view_entries": len(view.entries),
    }


async def cold_ms(policy_factory: Any, n: int) -> float:
    entries = transcript(n)
    start = time.perf_counter()
    await policy_factory().prepare(ContextRequest(entries, {}, ScriptedProvider()))
    return round((time.perf_counter() - start) * 1000, 3)


def _no_summary(entries: list[TranscriptEntry]) -> str:
    raise AssertionError("the benchmark's window should never need a summary")


async def main(quick: bool) -> dict[str, Any]:
    turns = 5 if quick else 50
    out: dict[str, Any] = {"turns_timed": turns, "sizes": {}}
    for n in (1_000, 10_000):
        # A window the transcript just fills, so the timed turns render real markers
        # (huge results offloaded, the oldest cleared); the summarizer is never needed.
        window = sum(entry_tokens(e) for e in transcript(n)) + 4_000

        def factory(window: int = window, store: Any = None) -> Compaction:
            return Compaction(
                context_window=window,
                reserve_output_tokens=4_000,
                summarizer=_no_summary,
                store=store,
            )

        compaction = await steady_ms(factory(), n, turns)
        archiving = await steady_ms(factory(store=InMemoryResultStore(max_entries=2 * n)), n, turns)
        noop = await steady_ms(NoopContextPolicy(), n, turns)
        out["sizes"][str(n)] = {
            "compaction": compaction,
            "compaction_with_store": archiving,
            "noop": noop,
            "ratio_to_noop": round(compaction["median_ms"] / max(noop["median_ms"], 1e-6), 1),
            "first_turn_ms": await cold_ms(factory, n),
            "under_5ms": max(compaction["median_ms"], archiving["median_ms"]) < 5.0,
        }
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few turns, for CI")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.quick)), indent=2))
