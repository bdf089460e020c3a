"""The second process of the multi-process checks: opens the store under test with its
factory on the directory it is given, does one action and prints a JSON line per step.

``python -m lovia.testing.conformance._worker KIND MODULE:FACTORY DIR ACTION [ARGS]``
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from ...stores.checkpoint import RunHead
from ...transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from ._factory import GO, PROBE, close_store, load_factory, open_store

__all__ = ["crash_batch", "run_entries"]


def run_entries(tag: str, size: int = 4) -> list[TranscriptEntry]:
    """A run's entries, named by ``tag``: input, then call/result pairs, then the answer."""
    out: list[TranscriptEntry] = [InputEntry(role="user", content=f"question {tag}")]
    i = 0
    while len(out) < size - 1:
        out.append(ToolCallEntry(call_id=f"{tag}-c{i}", name="lookup", arguments=f'{{"i": {i}}}'))
        if len(out) < size - 1:
            out.append(ToolResultEntry(call_id=f"{tag}-c{i}", output=f"result {tag} {i}"))
        i += 1
    out.append(AssistantTextEntry(content=f"answer {tag}"))
    return out[:size]


def crash_batch(k: int) -> list[TranscriptEntry]:
    """The ``k``-th save of the crash check's run: three entries naming ``k``."""
    return [
        ToolCallEntry(call_id=f"k{k}", name="step", arguments=f'{{"k": {k}}}'),
        ToolResultEntry(call_id=f"k{k}", output=f"step {k} " + "x" * 200),
        AssistantTextEntry(content=f"after step {k}"),
    ]


def say(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


async def start_together(directory: Path) -> None:
    """Say "ready", then wait for the file that starts every writer at once."""
    say({"ready": True})
    await asyncio.to_thread(_wait_for, directory / GO)


def _wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.005)


async def _session(store: Any, action: str, args: list[str], directory: Path) -> None:
    if action == "probe":
        await store.append(PROBE, run_entries("probe"), run_id="probe")
    elif action == "write":  # write TAG COUNT: COUNT runs TAG-0..., and the shared run
        tag, count = args[0], int(args[1])
        await start_together(directory)
        for k in range(count):
            await store.append("s", run_entries(f"{tag}-{k}"), run_id=f"{tag}-{k}")
            if k == count // 2:
                await store.append("s", run_entries("shared"), run_id="shared")
            say({"k": k})
    elif action == "forever":  # append runs of 20 entries until killed
        k = 0
        while True:
            await store.append("s", run_entries(f"r{k}", 20), run_id=f"r{k}")
            say({"k": k})
            k += 1
    else:
        raise SystemExit(f"unknown action {action!r}")


async def _checkpointer(store: Any, action: str, args: list[str], directory: Path) -> None:
    if action == "probe":
        await store.append(PROBE, run_entries("probe"), RunHead(agent_name="probe"))
    elif action == "write":  # write TAG COUNT: one run TAG saved COUNT times
        tag, count = args[0], int(args[1])
        await start_together(directory)
        for k in range(count):
            await store.append(tag, run_entries(f"{tag}-{k}", 2), RunHead("w", turns=k))
            say({"k": k})
    elif action == "forever":  # save one run until killed; the head counts the saves
        k = 0
        while True:
            await store.append("crash", crash_batch(k), RunHead("w", turns=k))
            say({"k": k})
            k += 1
    else:
        raise SystemExit(f"unknown action {action!r}")


async def main(argv: list[str]) -> None:
    kind, spec, directory, action, *args = argv
    store = await open_store(load_factory(spec), Path(directory))
    try:
        if kind == "session":
            await _session(store, action, args, Path(directory))
        else:
            await _checkpointer(store, action, args, Path(directory))
    finally:
        await close_store(store)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
