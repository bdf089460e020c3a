"""Concurrency: many writers on one session or file, two workers resuming one run, and two
runs on one conversation at once, which the session version refuses to fork (issue 9; S5,
S12, C13, C6, C10)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    AssistantTextEntry,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    Runner,
    RunResult,
    Session,
    SessionConflict,
    SQLiteCheckpointer,
    SQLiteSession,
)
from lovia.testing import ScriptedProvider, text

from .files import rows

WORKERS = Path(__file__).with_name("workers.py")


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(procs: list[subprocess.Popen[str]]) -> list[str]:
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out.strip())
    return outs


@pytest.mark.parametrize("backend", ["memory", "sqlite", "sqlite-wal"])
async def test_sixteen_tasks_appending_to_one_session_store_everything_once_in_order(
    tmp_path: Path, backend: str
) -> None:
    """16 tasks x 10 segments: all 160 stored, none twice, each task's order kept."""
    session: Session = (
        InMemorySession()
        if backend == "memory"
        else SQLiteSession(tmp_path / "s.db", wal=backend == "sqlite-wal")
    )

    async def task(t: int) -> None:
        for i in range(10):
            await session.append(
                "u1", [InputEntry(role="user", content=f"{t}:{i}")], run_id=f"{t}-{i}"
            )

    await asyncio.gather(*(task(t) for t in range(16)))
    segments = await session.segments("u1")
    ids = [s.run_id for s in segments]
    assert len(ids) == 160 and len(set(ids)) == 160
    for t in range(16):
        mine = [s.run_id for s in segments if s.run_id.startswith(f"{t}-")]
        assert mine == [f"{t}-{i}" for i in range(10)]
    for seg in segments:
        assert seg.entries == [InputEntry(role="user", content=seg.run_id.replace("-", ":"))]
    if isinstance(session, SQLiteSession):
        await session.close()


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_sixteen_tasks_appending_one_run_id_store_one_segment(
    tmp_path: Path, backend: str
) -> None:
    """S5 under contention: the first append wins, every caller gets the run id back."""
    session: Session = (
        InMemorySession() if backend == "memory" else SQLiteSession(tmp_path / "s.db")
    )
    got = await asyncio.gather(
        *(
            session.append("u1", [InputEntry(role="user", content=str(t))], run_id="same")
            for t in range(16)
        )
    )
    assert got == ["same"] * 16
    segments = await session.segments("u1")
    assert len(segments) == 1 and len(segments[0].entries) == 1
    if isinstance(session, SQLiteSession):
        await session.close()


@pytest.mark.parametrize("wal", [True, False], ids=["wal", "journal"])
def test_several_processes_hammering_one_file_never_see_database_is_locked(
    tmp_path: Path, wal: bool
) -> None:
    """S12: 4 processes, each 40 session appends and 40 checkpoint saves on one file, all
    succeed (busy timeout, BEGIN IMMEDIATE, bounded retries), and nothing is lost."""
    db = tmp_path / "shared.db"
    procs = [_spawn("hammer", str(db), f"w{w}", "40", "1" if wal else "0") for w in range(4)]
    assert _finish(procs) == ["ok"] * 4
    assert rows(db, "SELECT COUNT(*) FROM lovia_session_segments") == [(160,)]
    counts = rows(db, "SELECT run_id, entry_count FROM checkpoint_runs ORDER BY run_id")
    assert counts == [(f"run-w{w}", 40) for w in range(4)]
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]


def test_two_processes_resuming_one_run_with_the_lease_run_its_tool_once(tmp_path: Path) -> None:
    """With the run lease (the default), one process drives the run, the other waits and
    replays it: the dangling call runs once, both get the answer, one segment is stored."""
    db, log = tmp_path / "runs.db", tmp_path / "executions.log"
    assert _finish([_spawn("interrupt", str(db))]) == ["interrupted"]
    outs = _finish([_spawn("resume", str(db), str(log), "1") for _ in range(2)])
    assert sorted(o.split()[1] for o in outs) == ["drove", "replayed"]
    assert all(o.startswith("finished") for o in outs)
    assert len(log.read_text().split()) == 1
    assert rows(db, "SELECT entry_count, status FROM checkpoint_runs") == [(4, "completed")]
    assert rows(db, "SELECT run_id, n_entries FROM lovia_session_segments") == [("r1", 4)]


def test_two_processes_resuming_one_run_without_the_lease_is_the_documented_failure(
    tmp_path: Path,
) -> None:
    """lease=False: both drive the run, so the dangling call runs twice and the checkpoint
    collects both workers' entries; the session still stores one segment (S5). This is why
    the lease is on by default (docs/guarantees.md)."""
    db, log = tmp_path / "runs.db", tmp_path / "executions.log"
    _finish([_spawn("interrupt", str(db))])
    procs = [_spawn("resume", str(db), str(log), "0") for _ in range(2)]
    outs = _finish(procs)
    assert all(o.startswith("finished") for o in outs)
    assert rows(db, "SELECT run_id, n_entries FROM lovia_session_segments") == [("r1", 4)]
    executions = len(log.read_text().split())
    (count,) = rows(db, "SELECT entry_count FROM checkpoint_runs")[0]
    # they overlapped in the tool (the failure), or the second arrived after the first
    # stored the result (one model turn twice), or after it finished (a replay)
    assert (executions, count) in ((2, 6), (1, 5), (1, 4))


class HeldModel:
    """A model that holds each call until both runs are inside one, then answers."""

    name = "held"
    model = "held"
    supports_json_schema = False

    def __init__(self) -> None:
        self.prompt_sizes: dict[str, int] = {}
        self.both_inside = asyncio.Event()

    def stream(self, entries: Sequence[Any], **kwargs: Any) -> AsyncIterator[Any]:
        return self._answer(entries, kwargs)

    async def _answer(self, entries: Sequence[Any], kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        question = entries[-1].content
        self.prompt_sizes[question] = len(entries)
        if len(self.prompt_sizes) == 2:
            self.both_inside.set()
        await self.both_inside.wait()
        async for delta in ScriptedProvider([text(f"answer to {question}")]).stream(entries):
            yield delta


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_two_runs_on_one_conversation_at_once_never_fork_it(
    tmp_path: Path, backend: str
) -> None:
    """Issue 9 (no silent fork): both runs load the history at one version; the first to
    append lands, the second raises SessionConflict and writes nothing. Its checkpoint is
    failed (its answer is not in the session), its resume raises again (never appended
    later), and if_run_exists='restart' answers it with the new history (S5, C8, C12)."""
    model = HeldModel()
    agent = Agent("a", model=model)
    session: Any = InMemorySession() if backend == "memory" else SQLiteSession(tmp_path / "chat.db")
    cp: Any = (
        InMemoryCheckpointer() if backend == "memory" else SQLiteCheckpointer(tmp_path / "cp.db")
    )
    await session.append("u1", [InputEntry(role="user", content="hello")], run_id="r0")

    def go(question: str, run_id: str, policy: Any = "resume") -> Any:
        return Runner.run(
            agent,
            question,
            session=session,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, run_id, if_run_exists=policy),
        )

    outcomes = await asyncio.gather(
        go("question a", "ra"), go("question b", "rb"), return_exceptions=True
    )
    # each prompt held "hello" and its own question only: both loaded the same history
    assert model.prompt_sizes == {"question a": 2, "question b": 2}
    conflicts = [o for o in outcomes if isinstance(o, SessionConflict)]
    results = [o for o in outcomes if isinstance(o, RunResult)]
    assert len(conflicts) == 1 and len(results) == 1, outcomes
    winner, loser = ("ra", "rb") if results[0].run_id == "ra" else ("rb", "ra")
    assert conflicts[0].session_id == "u1"
    assert (conflicts[0].expected_version, conflicts[0].current_version) == (1, 2)
    segments = await session.segments("u1")
    assert [s.run_id for s in segments] == ["r0", winner]
    snap = await cp.load(loser)
    assert snap is not None and snap.status == "failed" and snap.session_version == 1

    with pytest.raises(SessionConflict):  # a replay never appends the stale answer
        await go("ignored", loser)
    assert [s.run_id for s in await session.segments("u1")] == ["r0", winner]

    question = "question b" if loser == "rb" else "question a"
    answer = await go(question, loser, "restart")
    assert answer.replayed is False
    assert model.prompt_sizes[question] == 4  # hello, the winner's question and answer, its own
    final = await session.segments("u1")
    assert [s.run_id for s in final] == ["r0", winner, loser]
    assert final[2].entries[-1] == AssistantTextEntry(content=f"answer to {question}")
    await _close(session, cp)


async def _close(*stores: Any) -> None:
    for store in stores:
        close = getattr(store, "close", None)
        if close is not None:
            await close()


PEEK = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "c.execute('SELECT COUNT(*) FROM sqlite_master').fetchall(); c.close()"
)


async def test_a_second_store_on_the_file_keeps_the_first_ones_lock(tmp_path: Path) -> None:
    """Opening a second store on a file must not drop the POSIX locks the first one holds
    (closing any descriptor of a file drops them all). Without its lock, another process
    closing its connection believes it is the last user, checkpoints the WAL and deletes it
    under our feet: that corrupted databases with several writers (S12)."""
    db = tmp_path / "shared.db"
    async with SQLiteSession(db, wal=True) as s, SQLiteCheckpointer(db, wal=True) as cp:
        await s.append("u1", [InputEntry(role="user", content="x")], run_id="r1")
        await cp.load("r1")  # opens the second connection (and reads the header)
        done = await asyncio.create_subprocess_exec(sys.executable, "-c", PEEK, str(db))
        assert await done.wait() == 0
        assert (tmp_path / "shared.db-wal").exists()
        assert (tmp_path / "shared.db-shm").exists()
        assert len(await s.segments("u1")) == 1
