"""A resumed run on SQLite reads its session's history once: the read that checks for a
kept stopped run is the one its setup starts from (issue 34)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia import Agent
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, text

from .session_reads import SESSION, answered, reached_the_model, run_in, stopped


async def test_a_resumed_run_reads_its_session_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session, cp = SQLiteSession(tmp_path / "s.db"), SQLiteCheckpointer(tmp_path / "c.db")
    await answered(session, cp)
    await stopped(cp, "r1", "again")
    reads: list[str] = []
    for name in ("history", "segments", "_run_history"):
        real = getattr(SQLiteSession, name)

        async def counted(self: SQLiteSession, *a: Any, _real: Any = real, _n: str = name) -> Any:
            reads.append(_n)
            return await _real(self, *a)

        monkeypatch.setattr(SQLiteSession, name, counted)
    model = ScriptedProvider([text("two")])
    result = await run_in(Agent("a", model=model), [], session, cp, "r1")
    assert result.output == "two" and result.started_at == 1000.0
    assert reads == ["history"]  # was ["history", "_run_history"]
    assert reached_the_model(model)  # the history reached the model
    monkeypatch.undo()
    assert [s.run_id for s in await session.segments(SESSION)] == ["r0", "r1"]
