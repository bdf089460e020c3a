"""Stores opened per job on one SQLite file (a worker, a replay per request): each sees the
file as it is now, and once every store is closed the file is left as a closed file is."""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

from lovia import (
    Agent,
    CheckpointOptions,
    InputEntry,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
)
from lovia.testing import ScriptedProvider, text


def agent(*answers: str) -> Agent:
    return Agent(name="a", model=ScriptedProvider([text(a) for a in answers]))


async def test_every_store_closed_folds_the_wal_back_and_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    keeper = SQLiteSession(path, wal=True)
    await keeper.append("s", [InputEntry(content="hello")], run_id="r0")
    for k in range(5):  # a store per job, each closed after its job
        async with SQLiteSession(path, wal=True) as job:
            await job.append("s", [InputEntry(content=f"job {k}")], run_id=f"r{k + 1}")
            assert len(await job.segments("s")) == k + 2
    assert (tmp_path / "shared.db-wal").exists()  # the keeper still has the file open
    await keeper.close()
    assert not (tmp_path / "shared.db-wal").exists()
    rows = sqlite3.connect(path).execute("SELECT COUNT(*) FROM lovia_session_segments").fetchone()
    assert rows == (6,)


async def test_a_store_collected_unclosed_lets_the_last_close_release_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dropped.db"
    dropped = SQLiteSession(path, wal=True)
    await dropped.append("s", [InputEntry(content="hi")], run_id="r0")
    del dropped
    gc.collect()
    async with SQLiteSession(path, wal=True) as last:
        assert len(await last.segments("s")) == 1
    assert not (tmp_path / "dropped.db-wal").exists()


async def test_a_replay_per_request_answers_from_the_file_as_it_is_now(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    writer = SQLiteCheckpointer(path)
    first = await Runner.run(agent("one"), "q", checkpoint=CheckpointOptions(writer, "job"))
    for _ in range(3):
        again = await Runner.run(
            agent(), "ignored", checkpoint=CheckpointOptions(SQLiteCheckpointer(path), "job")
        )
        assert again.replayed and again.output == first.output == "one"
    await writer.delete("job")  # the next store per request must see the run gone
    fresh = await Runner.run(
        agent("two"), "q", checkpoint=CheckpointOptions(SQLiteCheckpointer(path), "job")
    )
    assert not fresh.replayed and fresh.output == "two"
    await writer.close()


async def test_a_file_removed_and_made_again_is_read_afresh_while_an_old_store_lives(
    tmp_path: Path,
) -> None:
    path = tmp_path / "again.db"
    old = SQLiteSession(path)
    await old.append("s", [InputEntry(content="old file")], run_id="r0")
    assert len(await SQLiteSession(path).segments("s")) == 1
    path.unlink()
    new = SQLiteSession(path)
    assert await new.segments("s") == []
    await new.append("s", [InputEntry(content="new file")], run_id="r1")
    assert [s.run_id for s in await SQLiteSession(path).segments("s")] == ["r1"]
    assert [s.run_id for s in await old.segments("s")] == ["r0"]  # still on the file it opened
    await old.close()
    await new.close()


async def test_an_in_memory_store_keeps_its_data_between_calls() -> None:
    async with SQLiteSession(":memory:") as session:
        await session.append("s", [InputEntry(content="kept")], run_id="r0")
        assert [s.run_id for s in await session.segments("s")] == ["r0"]
