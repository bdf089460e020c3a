"""Replaying a completed run whose output cannot be given back, and the usage a replay
reports to an agent-as-tool caller (both as lovia 0.9.119)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InputEntry,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    Usage,
    UserError,
)
from lovia.testing import ScriptedProvider, text
from tests.faults import FaultySession, fail_appends


async def seed_unstorable_output(cp: SQLiteCheckpointer) -> list[InputEntry]:
    """A completed head as 0.9.119 writes it when the final output was not JSON-safe."""
    entries = [InputEntry(role="user", content="hi")]
    head = RunHead(
        agent_name="a",
        usage=Usage(3, 2),
        turns=1,
        status="completed",
        output=None,
        error={"type": "OutputNotSerializable", "message": "could not serialize"},
    )
    await cp.append("lost", entries, head)
    return entries


async def test_a_completed_run_whose_output_was_not_stored_is_refused_on_replay(
    tmp_path: Path,
) -> None:
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    await seed_unstorable_output(cp)
    model = ScriptedProvider([])
    with pytest.raises(UserError, match="not JSON-safe") as info:
        await Runner.run(Agent(name="a", model=model), [], checkpoint=CheckpointOptions(cp, "lost"))
    assert info.value.hint and "restart" in info.value.hint
    assert model.calls == []
    snap = await cp.load("lost")
    assert snap is not None and snap.status == "completed"  # nothing was written


async def test_the_refused_replay_still_appends_the_session_and_deletes_on_success(
    tmp_path: Path,
) -> None:
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    entries = await seed_unstorable_output(cp)
    session = SQLiteSession(tmp_path / "chat.db")
    with pytest.raises(UserError, match="not JSON-safe"):
        await Runner.run(
            Agent(name="a", model=ScriptedProvider([])),
            [],
            session=session,
            session_id="s1",
            checkpoint=CheckpointOptions(cp, "lost", delete_on_success=True),
        )
    [segment] = await session.segments("s1")
    assert segment.run_id == "lost" and segment.entries == entries
    assert await cp.load("lost") is None


async def test_a_replay_counts_its_usage_in_the_callers_even_when_it_fails(
    tmp_path: Path,
) -> None:
    """``_parent_usage`` is the keyword an agent-as-tool sub-run gets (0.9.119's, kept)."""
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    first = await Runner.run(
        Agent(name="a", model=ScriptedProvider([text("done")])),
        "hi",
        checkpoint=CheckpointOptions(cp, "r"),
    )
    caller = Usage()
    replayed = await Runner.run(
        Agent(name="a", model=ScriptedProvider([])),
        [],
        checkpoint=CheckpointOptions(cp, "r"),
        _parent_usage=caller,
    )
    assert caller == replayed.usage == first.usage and caller.total_tokens > 0

    down = FaultySession(SQLiteSession(tmp_path / "chat.db"), before=fail_appends(-1, OSError))
    caller = Usage()
    with pytest.raises(OSError):
        await Runner.run(
            Agent(name="a", model=ScriptedProvider([])),
            [],
            checkpoint=CheckpointOptions(cp, "r"),
            session=down,
            session_id="s1",
            _parent_usage=caller,
        )
    assert caller == first.usage
