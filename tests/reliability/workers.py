"""Child processes for the concurrency tests (run as a script, one job per process).

python workers.py hammer DB WORKER N WAL    # N session appends + N checkpoint saves
python workers.py resume DB LOG LEASE       # re-submit run "r1" of the stop job
python workers.py interrupt DB              # leave run "r1" interrupted in DB
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from lovia import (
    Agent,
    CheckpointOptions,
    InputEntry,
    RunCancelled,
    RunContext,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    tool,
)
from lovia.testing import ScriptedProvider, call, text


async def hammer(db: str, worker: str, n: int, wal: bool) -> None:
    async with SQLiteSession(db, wal=wal) as s, SQLiteCheckpointer(db, wal=wal) as cp:
        for i in range(n):
            entry = InputEntry(role="user", content=f"{worker}:{i}")
            await s.append("shared", [entry], run_id=f"{worker}-{i}")
            await cp.append(f"run-{worker}", [entry], RunHead(agent_name="a", turns=i))
    print("ok")


def _agent(log: str | None, first: bool) -> Agent:
    @tool
    async def work(ctx: RunContext[Any]) -> str:
        """Do the slow, visible part of the job."""
        if first:
            raise RunCancelled("the first worker stopped here")
        assert log is not None
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        os.close(fd)
        await asyncio.sleep(0.5)  # long enough for the other worker to arrive meanwhile
        return "worked"

    script = [call("work", {}, call_id="w1")] if first else [text("finished")]
    return Agent("a", model=ScriptedProvider(script), tools=[work])


async def interrupt(db: str) -> None:
    async with SQLiteCheckpointer(db, wal=True) as cp:
        try:
            await Runner.run(_agent(None, True), "job", checkpoint=CheckpointOptions(cp, "r1"))
        except RunCancelled:
            print("interrupted")


async def resume(db: str, log: str, lease: bool) -> None:
    async with SQLiteCheckpointer(db, wal=True) as cp, SQLiteSession(db, wal=True) as s:
        opts = CheckpointOptions(cp, "r1", lease=lease, lease_ttl=5.0)
        started = time.time()
        result = await Runner.run(
            _agent(log, False), "job", session=s, session_id="u1", checkpoint=opts
        )
        print(
            result.output,
            "replayed" if result.replayed else "drove",
            round(time.time() - started, 2),
        )


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "hammer":
        asyncio.run(hammer(argv[1], argv[2], int(argv[3]), argv[4] == "1"))
    elif mode == "interrupt":
        asyncio.run(interrupt(argv[1]))
    elif mode == "resume":
        asyncio.run(resume(argv[1], argv[2], argv[3] == "1"))


if __name__ == "__main__":
    main(sys.argv[1:])
