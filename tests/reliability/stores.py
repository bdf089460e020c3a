"""User-written stores for the failure tests: the four protocol methods around a built-in
store, failing or pausing where a test says (a custom store is legal as ``session=``)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from lovia import (
    Checkpointer,
    RunHead,
    RunSnapshot,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from lovia.messages import Message


class PausingCheckpointer:
    """A checkpointer whose ``pause_at``-th append waits on ``gate`` before saving."""

    def __init__(self, inner: Checkpointer, pause_at: int) -> None:
        self.inner = inner
        self.pause_at = pause_at
        self.appends = 0
        self.paused = asyncio.Event()
        self.gate = asyncio.Event()

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        self.appends += 1
        if self.appends == self.pause_at:
            self.paused.set()
            await self.gate.wait()
        await self.inner.append(run_id, entries, head)

    async def load(self, run_id: str) -> RunSnapshot | None:
        return await self.inner.load(run_id)

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)


def assert_well_formed(entries: Sequence[TranscriptEntry]) -> None:
    """Every tool result follows its call, and every call has exactly one result."""
    calls = [e.call_id for e in entries if isinstance(e, ToolCallEntry)]
    seen: set[str] = set()
    results: list[str] = []
    for e in entries:
        if isinstance(e, ToolCallEntry):
            seen.add(e.call_id)
        elif isinstance(e, ToolResultEntry):
            assert e.call_id in seen, f"orphaned result {e.call_id}"
            results.append(e.call_id)
    assert sorted(results) == sorted(calls), f"calls {calls} vs results {results}"


def assert_prompts_well_formed(prompts: list[list[Message]]) -> None:
    """No prompt sent to the model carries a tool call without its tool message."""
    for i, messages in enumerate(prompts):
        answered = {m.tool_call_id for m in messages if m.role == "tool"}
        for m in messages:
            for c in m.tool_calls:
                assert c.id in answered, f"prompt {i} carries call {c.id} without a result"
