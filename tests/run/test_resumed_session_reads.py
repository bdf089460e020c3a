"""A resumed run on SQLite reads its session's history once: the read that checks for a
kept stopped run is the one its setup starts from (issue 34)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, Runner
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.stores.checkpoint import RunHead
from lovia.testing import ScriptedProvider, text
from lovia.transcript import InputEntry


async def test_a_resumed_run_reads_its_session_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, cp = SQLiteSession(tmp_path / "s.db"), SQLiteCheckpointer(tmp_path / "c.db")
    agent = Agent("a", model=ScriptedProvider([text("one")]))
    await Runner.run(
        agent, "hi", session=session, session_id="u1", checkpoint=CheckpointOptions(cp, "r0")
    )
    head = RunHead("a", status="interrupted", session_id="u1", started_at=1000.0)
    await cp.append("r1", [InputEntry(role="user", content="again")], head)
    reads: list[str] = []
    for name in ("history", "segments", "_run_history"):
        real = getattr(SQLiteSession, name)

        async def counted(self: SQLiteSession, *a: Any, _real: Any = real, _n: str = name) -> Any:
            reads.append(_n)
            return await _real(self, *a)

        monkeypatch.setattr(SQLiteSession, name, counted)
    model = ScriptedProvider([text("two")])
    result = await Runner.run(
        agent.clone(model=model),
        [],
        session=session,
        session_id="u1",
        checkpoint=CheckpointOptions(cp, "r1"),
    )
    assert result.output == "two" and result.started_at == 1000.0
    assert reads == ["history"]  # was ["history", "_run_history"]
    [request] = model.calls
    assert "hi" in str(request) and "one" in str(request)  # the history reached the model
    monkeypatch.undo()
    assert [s.run_id for s in await session.segments("u1")] == ["r0", "r1"]
