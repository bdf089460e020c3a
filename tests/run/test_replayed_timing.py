"""A run answered again without running (a replay) carries the timing its segment recorded
in ``RunResult.started_at`` / ``finished_at``, as the run that wrote it did: the web's
``timing`` event of a re-submitted finished run comes from there (issue 30)."""

from __future__ import annotations

from pathlib import Path

from lovia import Agent, CheckpointOptions, Runner
from lovia.session import TIMING_META_KEY
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, text


async def test_a_run_replayed_from_its_segment_carries_the_recorded_timing(
    tmp_path: Path,
) -> None:
    session, cp = SQLiteSession(tmp_path / "s.db"), SQLiteCheckpointer(tmp_path / "c.db")
    opts = CheckpointOptions(cp, "r1", delete_on_success=True)
    agent = Agent("a", model=ScriptedProvider([text("done")]))
    first = await Runner.run(agent, "go", session=session, session_id="u1", checkpoint=opts)
    again = Agent("a", model=ScriptedProvider([]))
    second = await Runner.run(again, "go", session=session, session_id="u1", checkpoint=opts)
    assert second.replayed and second.output == "done"
    [segment] = await session.segments("u1")
    recorded = (segment.meta or {})[TIMING_META_KEY]
    assert (second.started_at, second.finished_at) == (
        recorded["started_at"],
        recorded["finished_at"],
    )
    assert (second.started_at, second.finished_at) == (first.started_at, first.finished_at)
