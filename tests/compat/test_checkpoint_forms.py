"""Checkpoint forms programs written for 0.9.119 use: ``CheckpointOptions(resume_from=...)``
without a checkpointer, the ``resume_only`` message, runs resumed from untimed heads, and the
``lovia.stores.checkpointer`` module path (issue 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

import lovia.stores
from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    Runner,
    ToolCallEntry,
    ToolResultEntry,
    UserError,
)
from lovia.checkpointer import RunHead, RunSnapshot
from lovia.session import TIMING_META_KEY
from lovia.stores.checkpointer import SQLiteCheckpointer
from lovia.testing import ScriptedProvider, text
from lovia.usage import Usage


async def test_resume_from_a_snapshot_needs_no_checkpointer() -> None:
    entries = [
        InputEntry(role="user", content="What time is it?"),
        ToolCallEntry(call_id="c1", name="clock", arguments="{}"),
        ToolResultEntry(call_id="c1", output="12:00"),
    ]
    snap = RunSnapshot(
        run_id="direct", agent_name="a", entries=entries, usage=Usage(input_tokens=10), turns=1
    )
    provider = ScriptedProvider([text("It is noon.")])

    result = await Runner.run(
        Agent("a", model=provider), [], checkpoint=CheckpointOptions(resume_from=snap)
    )

    assert result.output == "It is noon."
    assert result.entries[:3] == entries
    assert result.usage.input_tokens >= 10
    assert CheckpointOptions(resume_from=snap).resolved_run_id == "direct"


def test_options_without_a_checkpointer_or_a_snapshot_are_refused() -> None:
    with pytest.raises(UserError, match="checkpointer") as info:
        CheckpointOptions(run_id="r")
    assert info.value.hint is not None


async def test_resume_only_without_a_stored_run_says_no_snapshot_was_found() -> None:
    opts = CheckpointOptions(InMemoryCheckpointer(), "missing", if_run_exists="resume_only")

    with pytest.raises(UserError, match="No snapshot found for run_id='missing'") as info:
        await Runner.run(Agent("a", model=ScriptedProvider([])), [], checkpoint=opts)
    assert info.value.hint is not None


@pytest.mark.parametrize("started_at", [None, 1000.0])
async def test_a_resumed_run_keeps_its_heads_start_or_stays_untimed(
    started_at: float | None,
) -> None:
    cp, session = InMemoryCheckpointer(), InMemorySession()
    fields: dict[str, object] = {"agent_name": "a", "status": "interrupted", "turns": 0}
    if started_at is not None:
        fields["started_at"] = started_at
    await cp.append("r1", [InputEntry(role="user", content="go")], RunHead.from_dict(fields))

    result = await Runner.run(
        Agent("a", model=ScriptedProvider([text("hi")])),
        [],
        session=session,
        session_id="s",
        checkpoint=CheckpointOptions(cp, "r1"),
    )

    [segment] = await session.segments("s")
    timing = (segment.meta or {}).get(TIMING_META_KEY)
    if started_at is None:  # a head from before runs were timed: the start is not known
        assert timing is None
        snap = await cp.load("r1")
        assert snap is not None and snap.status == "completed" and snap.started_at is None
        assert result.started_at is None
    else:
        assert timing is not None and timing["started_at"] == started_at
        assert timing["finished_at"] > started_at
        # the result carries the timing its save wrote, so nobody reads it back
        assert (result.started_at, result.finished_at) == (started_at, timing["finished_at"])


async def test_stores_checkpointer_module_names_the_same_classes(tmp_path: Path) -> None:
    assert SQLiteCheckpointer is lovia.stores.SQLiteCheckpointer
    from lovia.stores.checkpointer import InMemoryCheckpointer as Mem

    assert Mem is InMemoryCheckpointer
    cp = SQLiteCheckpointer(tmp_path / "c.db")
    try:
        await Runner.run(
            Agent("a", model=ScriptedProvider([text("ok")])),
            "hi",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
        snap = await cp.load("r1")
        assert snap is not None and snap.output == "ok"
    finally:
        await cp.close()
