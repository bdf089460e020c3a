"""A run whose SQLite file another connection keeps locked, cut off by ``asyncio.wait_for``,
returns within the bounded waits of a cancelled run (its ``interrupted`` save, then its
lease's release), not after every busy wait of the store has run out (issue 27, part 3)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, tool
from lovia.testing import ScriptedProvider, call, text

# The waits of a cancelled run are 5 s (its interrupted save) and 5 s (its lease's release);
# the store's own busy waits on a locked file are 5 x 5 s per call, twice over. The guard
# sits between: only a cancel that waits for the busy waits goes past it. It times nothing.
GUARD_S = 28


async def test_a_cancel_ends_a_run_stuck_on_a_locked_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    holder: list[sqlite3.Connection] = []

    @tool
    def lock_the_file() -> str:
        """Another program takes the file's write lock, and keeps it."""
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN EXCLUSIVE")
        holder.append(conn)
        return "locked"

    agent = Agent(
        "a", model=ScriptedProvider([call("lock_the_file"), text("done")]), tools=[lock_the_file]
    )
    cp = SQLiteCheckpointer(str(path))
    cut_off: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    cut_off.set_result(None)
    try:
        run = Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))
        cut_off = asyncio.ensure_future(asyncio.wait_for(run, 1))
        done, _ = await asyncio.wait({cut_off}, timeout=GUARD_S)
        assert holder and holder[0].in_transaction  # the lock was held all along
        assert done, "the cancelled run still waited on the locked file"
        with pytest.raises(asyncio.TimeoutError):
            cut_off.result()
    finally:
        if not cut_off.done():
            await asyncio.gather(cut_off, return_exceptions=True)
        for conn in holder:
            conn.rollback()
            conn.close()
        await cp.close()
