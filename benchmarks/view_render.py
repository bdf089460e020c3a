"""Cost of turning a model view into each wire format, by history length: prints JSON.

    python benchmarks/view_render.py [--quick]

A conversation of N prior runs (user message, tool call, ~1 KB tool result, answer: four
entries each) is rendered the way a run does it: the next turn's view is the previous one
plus the new entries, with fresh instructions in front. ``turn_us`` is the median time to
render one more turn's view (what a run pays per model call); ``fresh_us`` renders the same
view from entries no earlier view shared (the cost without reuse, and the cost of a view
seen for the first time). A per-turn figure that stays flat as N grows is the point.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from lovia import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry
from lovia.providers.anthropic import to_anthropic_messages
from lovia.providers.openai import to_chat_messages
from lovia.testing import to_messages

PAYLOAD = "x" * 1024
FORMATS: dict[str, Callable[[list[TranscriptEntry]], Any]] = {
    "scripted": to_messages,
    "openai": to_chat_messages,
    "anthropic": to_anthropic_messages,
}


def one_run(i: int) -> list[TranscriptEntry]:
    return [
        InputEntry(content=f"question {i}"),
        ToolCallEntry(call_id=f"c{i}", name="fetch", arguments=f'{{"i": {i}}}'),
        ToolResultEntry(call_id=f"c{i}", output=f"{i:08d}{PAYLOAD}"),
        AssistantTextEntry(content=f"answer {i}"),
    ]


def measure(render: Callable[[list[TranscriptEntry]], Any], n: int, turns: int) -> dict[str, Any]:
    history = [e for i in range(n) for e in one_run(i)]
    system = InputEntry(role="system", content="You are a benchmark agent.")
    render([system, *history])  # the view the previous run sent
    per_turn = []
    for t in range(turns):
        new = one_run(n + t)
        view = [InputEntry(role="system", content="You are a benchmark agent."), *history, *new]
        start = time.perf_counter()
        render(view)
        per_turn.append(time.perf_counter() - start)
        history.extend(new)
    fresh = []
    for _ in range(max(3, turns // 4)):
        copies = [e.model_copy() for e in history]
        start = time.perf_counter()
        render([system, *copies])
        fresh.append(time.perf_counter() - start)
    return {
        "entries": len(history),
        "turn_us": round(statistics.median(per_turn) * 1e6, 1),
        "fresh_us": round(statistics.median(fresh) * 1e6, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    args = ap.parse_args()
    sizes = [10, 100] if args.quick else [100, 1000, 3000]
    turns = 5 if args.quick else 30
    out: dict[str, Any] = {"turns": turns, "formats": {}}
    for name, render in FORMATS.items():
        points = {str(n): measure(render, n, turns) for n in sizes}
        first, last = points[str(sizes[0])], points[str(sizes[-1])]
        out["formats"][name] = {
            "points": points,
            "turn_growth": round(last["turn_us"] / first["turn_us"], 2),
            "fresh_growth": round(last["fresh_us"] / first["fresh_us"], 2),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
