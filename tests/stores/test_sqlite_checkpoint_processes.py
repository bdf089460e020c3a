"""C13/S12: with wal=True several processes save runs into one SQLite checkpoint file."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lovia import InputEntry, SQLiteCheckpointer

WRITER = """
import asyncio, sys
from lovia import InputEntry, RunHead, SQLiteCheckpointer

async def main(path: str, run_id: str) -> None:
    async with SQLiteCheckpointer(path, wal=True) as cp:
        for step in range(80):
            entry = InputEntry(role="user", content=f"{run_id}:{step}")
            await cp.append(run_id, [entry], RunHead("worker", turns=step))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_processes_sharing_a_wal_file_each_keep_their_run_whole(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    async with SQLiteCheckpointer(path, wal=True) as cp:
        await cp.load("create-the-schema-first")
    writers = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", WRITER, str(path), f"worker-{i}")
        for i in range(3)
    ]
    codes = await asyncio.wait_for(asyncio.gather(*(w.wait() for w in writers)), timeout=120)
    assert codes == [0, 0, 0]
    async with SQLiteCheckpointer(path, wal=True) as cp:
        for i in range(3):
            snap = await cp.load(f"worker-{i}")
            assert snap is not None and snap.turns == 79
            assert snap.entries == [
                InputEntry(role="user", content=f"worker-{i}:{s}") for s in range(80)
            ]
