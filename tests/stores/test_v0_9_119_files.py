"""A SQLite file written by lovia 0.9.119 opens here with nothing lost (issue 12).

``tests/fixtures/v0_9_119.sqlite`` was written by 0.9.119 itself (``make_v0_9_119.py`` says
how and what it holds). Read-only stores read it without changing a byte; stores opened for
writing migrate it once, after a checked copy; ``lovia migrate`` does the same explicitly;
a migration killed before its commit leaves the file as it was.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, Runner, SchemaError, StoreError, tool
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, text
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "v0_9_119.sqlite"
LEGACY_TABLES = {"lovia_schema", "session_runs", "snapshot_heads", "snapshot_turns"}
# A migrated file keeps ``lovia_schema``: its rows tell 0.9.119 the file is not its own any more.
LEGACY_DATA = LEGACY_TABLES - {"lovia_schema"}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tables(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "app.sqlite"
    shutil.copyfile(FIXTURE, path)
    return path


def lovia_cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from lovia.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


async def check_contents(session: Any, cp: Any) -> None:
    """What 0.9.119 stored, as this lovia reads it."""
    segments = await session.segments("chat-1")
    assert [s.run_id for s in segments] == ["r-tool", "r-handoff"]
    tool_run = segments[0].entries
    assert [type(e) for e in tool_run] == [
        InputEntry,
        ToolCallEntry,
        ToolResultEntry,
        AssistantTextEntry,
    ]
    assert tool_run[0] == InputEntry(content="What is 2 + 3?")
    assert isinstance(tool_run[2], ToolResultEntry) and tool_run[2].output == "5"
    assert tool_run[3] == AssistantTextEntry(content="2 + 3 = 5")
    assert segments[0].meta is not None and "timing" in segments[0].meta
    handoff = segments[1].entries
    assert isinstance(handoff[1], ToolCallEntry) and handoff[1].name == "transfer_to_billing"
    assert handoff[-1] == AssistantTextEntry(content="Your invoice is paid.")
    assert len(await session.load("chat-1")) == 8
    assert await session.segments("chat-2") == []  # the crashed run wrote no segment
    [info] = await session.list_sessions()
    assert (info.session_id, info.runs, info.title) == ("chat-1", 2, "What is 2 + 3?")

    runs = {r.run_id: r for r in await cp.list_runs()}
    assert {rid: r.status for rid, r in runs.items()} == {
        "r-tool": "completed",
        "r-handoff": "completed",
        "r-inflight": "running",
        "r-interrupted": "interrupted",
        "r-failed": "failed",
    }
    done = runs["r-tool"]
    assert (done.output, done.agent_name, done.turns, done.session_id) == (
        "2 + 3 = 5",
        "calc",
        2,
        "chat-1",
    )
    assert done.last_input_tokens == 1 and done.started_at is not None
    assert "context" in done.context_state
    assert runs["r-handoff"].agent_name == "billing"
    inflight = await cp.load("r-inflight")
    assert inflight is not None
    assert [type(e).__name__ for e in inflight.entries] == [
        "InputEntry",
        "ToolCallEntry",
        "ToolResultEntry",
        "ToolCallEntry",
    ]
    assert runs["r-interrupted"].error == {"type": "RunCancelled", "message": "stopped by the user"}
    assert runs["r-failed"].error is not None


async def test_read_only_stores_read_everything_and_change_nothing(db: Path) -> None:
    before = digest(db)
    async with (
        SQLiteSession(db, read_only=True) as session,
        SQLiteCheckpointer(db, read_only=True) as cp,
    ):
        await check_contents(session, cp)
    assert digest(db) == before
    assert sorted(os.listdir(db.parent)) == [db.name]  # no journal, WAL or copy left behind


async def test_stores_opened_for_writing_migrate_once_with_a_checked_copy(db: Path) -> None:
    original = digest(db)
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:
        await check_contents(session, cp)
    assert not tables(db) & LEGACY_DATA
    backup = db.with_name(db.name + ".0.9.119.bak")
    assert sorted(os.listdir(db.parent)) == sorted([db.name, backup.name])
    # the copy is the original, still a 0.9.119 file: it reads the same
    assert tables(backup) >= LEGACY_TABLES
    async with (
        SQLiteSession(backup, read_only=True) as session,
        SQLiteCheckpointer(backup, read_only=True) as cp,
    ):
        await check_contents(session, cp)
    assert digest(FIXTURE) == original
    migrated = digest(db)
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:  # again: no-op
        await check_contents(session, cp)
    assert digest(db) == migrated
    assert len(os.listdir(db.parent)) == 2


async def test_runs_resume_and_replay_on_a_0_9_119_file(db: Path) -> None:
    ran: list[str] = []

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        ran.append(f"lookup {key}")
        return f"value of {key}"

    @tool
    async def crash(reason: str) -> str:
        """The call the 0.9.119 worker died in."""
        ran.append(f"crash {reason}")
        return "done this time"

    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:
        # the crashed run resumes: the call it died in runs, earlier calls do not
        worker = Agent(
            name="worker", model=ScriptedProvider([text("job done")]), tools=[lookup, crash]
        )
        result = await Runner.run(
            worker,
            "Start the job.",
            session=session,
            session_id="chat-2",
            checkpoint=CheckpointOptions(cp, "r-inflight"),
        )
        assert result.output == "job done"
        assert ran == ["crash kill"]
        entries = await session.load("chat-2")
        assert entries[0] == InputEntry(content="Start the job.")
        assert entries[-1] == AssistantTextEntry(content="job done")
        # a completed run replays its answer without calling the model
        calc = Agent(name="calc", model=ScriptedProvider([]))
        replay = await Runner.run(
            calc,
            "What is 2 + 3?",
            session=session,
            session_id="chat-1",
            checkpoint=CheckpointOptions(cp, "r-tool"),
        )
        assert replay.output == "2 + 3 = 5"
        assert len(await session.load("chat-1")) == 8
        # the conversation goes on from 0.9.119's history
        model = ScriptedProvider([text("7")])
        more = await Runner.run(
            Agent(name="calc", model=model), "And 3 + 4?", session=session, session_id="chat-1"
        )
        assert more.output == "7"
        assert len(await session.load("chat-1")) == 10


def test_lovia_migrate_checks_then_converts_and_is_idempotent(db: Path) -> None:
    before = digest(db)
    check = lovia_cli("migrate", "--check", "--json", str(db))
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout) == {
        "path": str(db),
        "state": "legacy",
        "sessions": 1,
        "segments": 2,
        "runs": 5,
        "backup": None,
    }
    assert digest(db) == before and os.listdir(db.parent) == [db.name]
    done = lovia_cli("migrate", str(db))
    assert done.returncode == 0, done.stderr
    assert "converted 1 session (2 runs) and 5 checkpoints" in done.stdout
    migrated = digest(db)
    again = lovia_cli("migrate", "--json", str(db))
    assert json.loads(again.stdout)["state"] == "current"
    assert digest(db) == migrated


def test_read_only_commands_read_a_0_9_119_file_without_migrating_it(db: Path) -> None:
    before = digest(db)
    listed = lovia_cli("sessions", "list", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    assert [s["session_id"] for s in json.loads(listed.stdout)] == ["chat-1"]
    assert "lovia migrate" in listed.stderr  # told how to convert it
    runs = lovia_cli("runs", "show", "r-inflight", "--db", str(db), "--json")
    assert runs.returncode == 0, runs.stderr
    assert json.loads(runs.stdout)["status"] == "running"
    assert digest(db) == before and os.listdir(db.parent) == [db.name]


KILLED = textwrap.dedent(
    """
    import asyncio, os, signal, sqlite3, sys
    from lovia.stores import _legacy, _sqlite_conn
    from lovia.stores.sqlite import SQLiteSession

    def small_cache(*args, **kwargs):  # changed pages spill into the file before the commit
        conn = sqlite3.connect(*args, **kwargs)
        conn.execute("PRAGMA cache_size = 1")
        return conn

    _sqlite_conn.sqlite3 = type("sqlite3", (), {**vars(sqlite3), "connect": small_cache})

    def die():  # the converted rows are written, the commit has not happened
        os.kill(os.getpid(), signal.SIGKILL)

    _legacy._before_commit = die

    async def main():
        async with SQLiteSession(sys.argv[1]) as session:
            await session.load("chat-1")

    asyncio.run(main())
    """
)


async def test_a_migration_killed_before_its_commit_leaves_the_file_as_it_was(
    db: Path,
) -> None:
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", KILLED, str(db)],
        capture_output=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == -9, done.stderr
    assert digest(db) != digest(FIXTURE)  # half-converted pages are in the file
    assert db.with_name(db.name + "-journal").exists()
    # a reader that may not write cannot roll the journal back: refused, never half-read
    with pytest.raises(StoreError) as info:
        async with SQLiteSession(db, read_only=True) as session:
            await session.load("chat-1")
    assert info.value.hint
    # a writer rolls the half-done conversion back, then migrates from the 0.9.119 rows
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:
        await check_contents(session, cp)
    assert not tables(db) & LEGACY_DATA


async def test_a_row_that_does_not_decode_refuses_the_migration_and_changes_nothing(
    db: Path,
) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            'UPDATE session_runs SET entries_json = \'[{"type": "bogus"}]\' WHERE run_id = ?',
            ("r-handoff",),
        )
    conn.close()
    before = digest(db)
    with pytest.raises(SchemaError) as info:
        async with SQLiteSession(db) as session:
            await session.load("chat-1")
    assert "r-handoff" in info.value.message and info.value.hint
    assert digest(db) == before
    assert os.listdir(db.parent) == [db.name]


async def test_a_0_9_119_file_in_wal_mode_reads_and_migrates(db: Path) -> None:
    """0.9.119's web app opened its file with wal=True: the same file in WAL mode."""
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal"
    conn.close()
    before = digest(db)
    async with (
        SQLiteSession(db, read_only=True) as session,
        SQLiteCheckpointer(db, read_only=True) as cp,
    ):
        await check_contents(session, cp)
    assert digest(db) == before and os.listdir(db.parent) == [db.name]
    async with SQLiteSession(db, wal=True) as session, SQLiteCheckpointer(db, wal=True) as cp:
        await check_contents(session, cp)
    assert not tables(db) & LEGACY_DATA


REFERENCE_ENV = "LOVIA_REFERENCE_PYTHON"


async def test_a_file_0_9_119_writes_now_reads_the_same(tmp_path: Path) -> None:
    """With a Python that has lovia 0.9.119 installed (``LOVIA_REFERENCE_PYTHON``), write the
    fixture afresh and read it: the frozen file and 0.9.119 today agree."""
    reference = os.environ.get(REFERENCE_ENV)
    if not reference:
        pytest.skip(f"{REFERENCE_ENV} is not set (a python with lovia==0.9.119 installed)")
    path = tmp_path / "fresh.sqlite"
    script = ROOT / "tests" / "fixtures" / "make_v0_9_119.py"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = await asyncio.to_thread(
        subprocess.run,
        [reference, str(script), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    async with (
        SQLiteSession(path, read_only=True) as session,
        SQLiteCheckpointer(path, read_only=True) as cp,
    ):
        await check_contents(session, cp)
    async with SQLiteSession(path) as session, SQLiteCheckpointer(path) as cp:
        await check_contents(session, cp)


READ_WITH_0_9_119 = textwrap.dedent(
    """
    import asyncio, sys
    from lovia.stores import SQLiteSession

    async def main():
        try:
            entries = await SQLiteSession(sys.argv[1]).load("chat-1")
        except Exception as exc:
            print(type(exc).__name__, str(exc).splitlines()[0])
        else:
            print("read", len(entries))

    asyncio.run(main())
    """
)


async def test_0_9_119_refuses_a_file_this_lovia_migrated(db: Path) -> None:
    """After the migration, 0.9.119 says a newer lovia wrote the file, instead of making empty
    tables of its own and writing a second history next to the migrated one."""
    reference = os.environ.get(REFERENCE_ENV)
    if not reference:
        pytest.skip(f"{REFERENCE_ENV} is not set (a python with lovia==0.9.119 installed)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def read_with_0_9_119(path: Path) -> str:
        done = subprocess.run(
            [reference, "-c", READ_WITH_0_9_119, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=path.parent,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert (await asyncio.to_thread(read_with_0_9_119, db)).startswith("read ")
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:
        await check_contents(session, cp)
    migrated = digest(db)
    said = await asyncio.to_thread(read_with_0_9_119, db)
    assert said.startswith("LoviaError") and "newer" in said, said
    assert digest(db) == migrated
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:
        await check_contents(session, cp)


OPENER = textwrap.dedent(
    """
    import asyncio, sys
    from lovia.stores import SQLiteCheckpointer, SQLiteSession

    async def main():
        async with SQLiteSession(sys.argv[1], wal=True) as s, SQLiteCheckpointer(
            sys.argv[1], wal=True
        ) as cp:
            entries = await s.load("chat-1")
            snap = await cp.load("r-inflight")
            print(len(entries), snap.status)

    asyncio.run(main())
    """
)


async def test_processes_opening_a_0_9_119_file_at_once_migrate_it_once(db: Path) -> None:
    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", OPENER, str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

    procs = [start() for _ in range(4)]
    outputs = [await asyncio.to_thread(p.communicate, timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [err for _, err in outputs]
    assert [out.strip() for out, _ in outputs] == ["8 running"] * 4
    # SQLite's own -wal/-shm may outlive four processes closing at the same moment (each saw
    # another still open, so none removed them): the files that count are the database and
    # one backup
    left = [f for f in os.listdir(db.parent) if not f.endswith(("-wal", "-shm"))]
    assert sorted(left) == sorted([db.name, db.name + ".0.9.119.bak"])
    assert not tables(db) & LEGACY_DATA
