"""A run's first entries without the rest (issue 14, item 13): ``load_first_entries`` gives,
for many runs in one call, what ``load`` gives cut to the first ``limit`` entries, on every
backend, and reads 0.9.119 files as they are."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from lovia import AssistantTextEntry, InputEntry, RunHead, SQLiteCheckpointer
from lovia.errors import StoreError, UserError

from .backends import checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def head(status: str, session_id: str | None = "s", at: float = 1.0) -> RunHead:
    return RunHead("a", status=status, session_id=session_id, updated_at=at)  # type: ignore[arg-type]


async def fill(cp: Any) -> None:
    await cp.append("r1", [user("first question")], head("running"))
    await cp.append("r1", [AssistantTextEntry(content="y" * 50_000)], head("failed", at=2.0))
    await cp.append("r2", [user("a"), user("b"), user("c")], head("interrupted"))
    await cp.append("r2", [user("d")], head("interrupted", at=3.0))
    await cp.append("empty", [], head("running"))


async def test_first_entries_are_the_start_of_what_load_gives(checkpointer: Any) -> None:
    await fill(checkpointer)
    ids = ["r1", "r2", "empty", "nobody"]
    for limit in (1, 2, 3, 4, 10):
        firsts = await checkpointer.load_first_entries(ids, limit=limit)
        assert set(firsts) == {"r1", "r2", "empty"}, "an unknown run is left out"
        for run_id, entries in firsts.items():
            whole = await checkpointer.load(run_id)
            assert entries == whole.entries[:limit], (run_id, limit)
    one = await checkpointer.load_first_entries(["r1"])  # limit=1 by default
    assert [e.text for e in one["r1"]] == ["first question"]
    assert await checkpointer.load_first_entries([]) == {}


async def test_first_entries_come_back_once_per_run_in_any_order(checkpointer: Any) -> None:
    await fill(checkpointer)
    firsts = await checkpointer.load_first_entries(["r2", "r1", "r2"], limit=2)
    assert sorted(firsts) == ["r1", "r2"]
    assert [e.text for e in firsts["r2"]] == ["a", "b"]


async def test_first_entries_are_copies(checkpointer: Any) -> None:
    await checkpointer.append("r", [user("x")], head("failed"))
    firsts = await checkpointer.load_first_entries(["r"])
    firsts["r"].append(user("y"))
    assert len((await checkpointer.load_first_entries(["r"], limit=5))["r"]) == 1


async def test_first_entries_refuse_bad_arguments_clearly(checkpointer: Any) -> None:
    for args, kwargs in (
        (("r1",), {}),
        ((["r1"],), {"limit": 0}),
        ((["r1"],), {"limit": True}),
        ((["r1"],), {"limit": 1.5}),
        (([""],), {}),
        (([3],), {}),
    ):
        with pytest.raises(UserError) as info:
            await checkpointer.load_first_entries(*args, **kwargs)
        assert info.value.hint, (args, kwargs)


# -- SQLite files as they are -----------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_0_9_119_file_gives_first_entries_without_being_changed(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    shutil.copyfile(FIXTURES / "v0_9_119.sqlite", path)
    before = _digest(path)
    async with SQLiteCheckpointer(path, read_only=True) as cp:
        runs = await cp.list_runs()
        firsts = await cp.load_first_entries([r.run_id for r in runs], limit=2)
    assert runs and set(firsts) == {r.run_id for r in runs}
    assert all(firsts[r.run_id] == r.entries[:2] for r in runs)
    assert _digest(path) == before


async def test_a_damaged_first_save_is_a_store_error_naming_the_run(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "cp.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.append("bad", [user("x")], head("failed"))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE checkpoint_batches SET entries = ?", (b"[{not json",))
    async with SQLiteCheckpointer(path) as cp:
        with pytest.raises(StoreError) as info:
            await cp.load_first_entries(["bad"])
    assert "'bad'" in info.value.message and info.value.hint
