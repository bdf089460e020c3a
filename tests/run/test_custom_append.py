"""A checkpointer subclass that overrides ``append`` sees every save of a run, although the
built-in stores save without a task when they can (issue 18)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    TranscriptEntry,
)
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class CountingSQLite(SQLiteCheckpointer):
    statuses: list[str]

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        self.statuses.append(head.status)
        await super().append(run_id, entries, head)


class CountingMemory(InMemoryCheckpointer):
    statuses: list[str]

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        self.statuses.append(head.status)
        await super().append(run_id, entries, head)


@pytest.mark.parametrize("kind", ["sqlite-wal", "memory"])
async def test_an_overridden_append_sees_every_save(kind: str, tmp_path: Path) -> None:
    agent = Agent(
        "a",
        model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]),
        tools=[add],
    )
    cp: SQLiteCheckpointer | InMemoryCheckpointer
    if kind == "memory":
        cp = CountingMemory()
    else:
        cp = CountingSQLite(tmp_path / "c.db", wal=True)
    cp.statuses = []  # type: ignore[union-attr]
    plain = InMemoryCheckpointer()
    await Runner.run(
        Agent("a", model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]), tools=[add]),
        "sum",
        checkpoint=CheckpointOptions(plain, "same"),
    )
    result = await Runner.run(agent, "sum", checkpoint=CheckpointOptions(cp, "r"))
    assert result.output == "3"
    statuses = cp.statuses  # type: ignore[union-attr]
    assert statuses[-1] == "completed" and statuses.count("completed") == 1
    snap, reference = await cp.load("r"), await plain.load("same")
    assert snap is not None and reference is not None
    assert len(statuses) >= 3  # the input, the model's turn, the tool's result, the answer
    assert snap.entries == reference.entries
    if isinstance(cp, SQLiteCheckpointer):
        await cp.close()
