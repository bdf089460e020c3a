"""Retention: ``prune(older_than=..., statuses=...)`` on the built-in checkpointers forgets
finished runs so a store does not grow without bound; sessions are untouched; ``VACUUM``
shrinks the file afterwards (issue 9; C1, C5, C9)."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InputEntry,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    UserError,
)
from lovia.testing import ScriptedProvider, text
from tests.stores.backends import checkpoint_backend, checkpointer

from .files import ENTRIES, rows

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name

DAY = 86_400.0


@pytest.fixture
def cp(checkpointer: Any) -> Any:
    return checkpointer


async def _store(cp: Any, run_id: str, status: str, age_days: float) -> None:
    head = RunHead(agent_name="a", status=status, updated_at=time.time() - age_days * DAY)  # type: ignore[arg-type]
    await cp.append(run_id, ENTRIES, head)


async def _ids(cp: Any) -> set[str]:
    return {s.run_id for s in await cp.list_runs()}


async def _fill(cp: Any) -> None:
    for status in ("completed", "failed", "running", "interrupted"):
        await _store(cp, f"old-{status}", status, 30)
        await _store(cp, f"new-{status}", status, 0)


async def test_prune_by_default_forgets_finished_runs_of_any_age(cp: Any) -> None:
    await _fill(cp)
    assert await cp.prune() == 4
    assert await _ids(cp) == {"old-running", "new-running", "old-interrupted", "new-interrupted"}
    assert await cp.prune() == 0


async def test_prune_older_than_keeps_recent_runs(cp: Any) -> None:
    await _fill(cp)
    assert await cp.prune(older_than=7 * DAY) == 2
    assert await cp.load("old-completed") is None and await cp.load("old-failed") is None
    assert {"new-completed", "new-failed", "old-running"} <= await _ids(cp)


async def test_prune_with_chosen_statuses_only_touches_those(cp: Any) -> None:
    await _fill(cp)
    assert await cp.prune(older_than=DAY, statuses=["interrupted"]) == 1
    assert "old-interrupted" not in await _ids(cp)
    assert len(await _ids(cp)) == 7
    assert await cp.prune(statuses=[]) == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"older_than": -1},
        {"older_than": math.nan},
        {"older_than": True},
        {"older_than": "7d"},
        {"statuses": "completed"},
        {"statuses": ["done"]},
    ],
    ids=["negative", "nan", "bool", "text", "one-string", "unknown-status"],
)
async def test_prune_with_bad_arguments_raises_and_deletes_nothing(
    cp: Any, kwargs: dict[str, Any]
) -> None:
    await _fill(cp)
    with pytest.raises(UserError) as info:
        await cp.prune(**kwargs)
    assert info.value.hint
    assert len(await _ids(cp)) == 8


async def test_a_pruned_run_id_starts_afresh_when_submitted_again(cp: Any) -> None:
    model = ScriptedProvider([text("first"), text("second")])
    opts = CheckpointOptions(cp, "job-1")
    assert (await Runner.run(Agent("a", model=model), "go", checkpoint=opts)).output == "first"
    assert await cp.prune() == 1
    assert (await Runner.run(Agent("a", model=model), "go", checkpoint=opts)).output == "second"
    assert len(model.calls) == 2


async def test_prune_leaves_sessions_in_the_same_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    async with SQLiteSession(path) as session, SQLiteCheckpointer(path) as cp:
        model = ScriptedProvider([text("one"), text("two")])
        for i in range(2):
            await Runner.run(
                Agent("a", model=model),
                f"q{i}",
                session=session,
                session_id="u1",
                checkpoint=CheckpointOptions(cp, f"r{i}"),
            )
        before = rows(path, "SELECT * FROM lovia_session_segments ORDER BY seq")
        assert await cp.prune() == 2
        assert await cp.list_runs() == []
        assert rows(path, "SELECT * FROM lovia_session_segments ORDER BY seq") == before
        assert [e.content for e in await session.load("u1") if isinstance(e, InputEntry)] == [
            "q0",
            "q1",
        ]


async def test_vacuum_after_prune_shrinks_the_file_and_the_stores_still_work(
    tmp_path: Path,
) -> None:
    """The documented path: prune, then VACUUM with the stores closed (docs/guarantees.md)."""
    path = tmp_path / "runs.db"
    async with SQLiteCheckpointer(path) as cp:
        big = [InputEntry(role="user", content="x" * 100_000)]
        for i in range(20):
            await cp.append(f"r{i}", big, RunHead(agent_name="a", status="completed"))
        await cp.append("keep", ENTRIES, RunHead(agent_name="a"))
        full = path.stat().st_size
        assert await cp.prune() == 20
        assert path.stat().st_size == full  # freed pages stay in the file until VACUUM
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("VACUUM")
    conn.close()
    assert path.stat().st_size < full / 5
    async with SQLiteCheckpointer(path) as cp:
        snap = await cp.load("keep")
        assert snap is not None and snap.entries == ENTRIES
        await cp.append("after", ENTRIES, RunHead(agent_name="a"))
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]


def test_lovia_runs_prune_deletes_old_finished_runs_and_keeps_the_rest(tmp_path: Path) -> None:
    """The command line: ``lovia runs prune --older-than 7d`` (and ``--json``)."""

    path = tmp_path / "app.db"

    async def fill() -> None:
        async with SQLiteCheckpointer(path, wal=True) as cp:
            await _fill(cp)

    asyncio.run(fill())
    lovia = str(Path(sys.executable).with_name("lovia"))
    args = [lovia, "runs", "prune", "--db", str(path), "--older-than", "7d", "--json"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"pruned": 2}
    left = rows(path, "SELECT run_id FROM checkpoint_runs ORDER BY run_id")
    assert [r[0] for r in left] == sorted(
        f"{age}-{s}"
        for age in ("old", "new")
        for s in ("completed", "failed", "running", "interrupted")
        if not (age == "old" and s in ("completed", "failed"))
    )
    bad = subprocess.run([*args[:-3], "--older-than", "soon"], capture_output=True, text=True)
    assert bad.returncode != 0 and "not a duration" in bad.stderr
