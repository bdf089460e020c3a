"""A database with damaged rows (another program wrote them, a disk flipped bytes): the
commands name the damaged run or session, say how to get rid of it, and doing what they say
works from the command line; the undamaged rest stays readable."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, text

ROOT = Path(__file__).resolve().parents[2]


async def _write(db: Path) -> None:
    session, cp = SQLiteSession(db), SQLiteCheckpointer(db)
    for sid, rid in (("s1", "r1"), ("s1", "r2"), ("s2", "r3")):
        agent = Agent("a", model=ScriptedProvider([text(f"answer {rid}")]))
        await Runner.run(
            agent,
            f"q {rid}",
            session=session,
            session_id=sid,
            checkpoint=CheckpointOptions(cp, rid),
        )
    await session.close()
    await cp.close()


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """s1's first segment is not JSON; run r2's saved entries are not JSON either."""
    db = tmp_path / "lovia.db"
    asyncio.run(_write(db))
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("UPDATE lovia_session_segments SET entries = '{oops' WHERE run_id = 'r1'")
        conn.execute(
            "UPDATE checkpoint_batches SET entries = x'00ff' WHERE run_key = "
            "(SELECT run_key FROM checkpoint_runs WHERE run_id = 'r2')"
        )
        conn.commit()
    return db


def lovia(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from lovia.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args, "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


def test_a_run_with_damaged_entries_is_listed_named_and_deleted(damaged: Path) -> None:
    listed = lovia(damaged, "runs", "list")
    assert listed.returncode == 0, listed.stderr
    assert {line.split()[0] for line in listed.stdout.splitlines()} == {"r1", "r2", "r3"}
    shown = lovia(damaged, "runs", "show", "r2")
    assert shown.returncode == 2 and len(shown.stderr.splitlines()) == 2  # one line each
    assert "'r2'" in shown.stderr and "lovia runs delete" in shown.stderr
    deleted = lovia(damaged, "runs", "delete", "r2")
    assert deleted.returncode == 0, deleted.stderr
    assert "r2" not in lovia(damaged, "runs", "list").stdout
    assert lovia(damaged, "runs", "show", "r3").returncode == 0


def test_a_session_with_a_damaged_segment_is_cleared_as_its_hint_says(damaged: Path) -> None:
    shown = lovia(damaged, "sessions", "show", "s1")
    assert shown.returncode == 2 and "lovia sessions clear" in shown.stderr
    cleared = lovia(damaged, "sessions", "clear", "s1")
    assert cleared.returncode == 0, cleared.stderr
    assert [line.split()[0] for line in lovia(damaged, "sessions", "list").stdout.splitlines()] == [
        "s2"
    ]
    assert lovia(damaged, "runs", "list").stdout.split()[0] == "r3"  # s1's checkpoints went too
    assert "answer r3" in lovia(damaged, "sessions", "show", "s2").stdout
