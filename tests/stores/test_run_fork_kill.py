"""Issue 33: a process killed with SIGKILL while it forks runs leaves each fork absent or
whole, on the durable backends (a fixed, small number of kills at whatever point the fork
was at)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, Runner, tool
from lovia.testing import ScriptedProvider, call, text

from .backends import Backend, checkpoint_backend

__all__ = ["checkpoint_backend"]  # fixture used by name

FORKER = """
import asyncio, sys

async def main(kind: str, where: str, prefix: str, start: int) -> None:
    if kind == "sqlite":
        from lovia import SQLiteCheckpointer
        cp = SQLiteCheckpointer(where)
    else:
        from lovia import PostgresCheckpointer
        cp = PostgresCheckpointer(where, table_prefix=prefix)
    for i in range(start, start + 10_000):
        await cp.fork("r1", f"f{i}", at_turn=2, tool_results={"call_add": "70"})
        sys.stdout.write(f"{i}\\n")
        sys.stdout.flush()

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""

TRIALS = 3
FORKS_BEFORE_KILL = (1, 4, 9)  # forks a trial lets finish before it kills the next one


async def _source(cp: Any) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedProvider(
        [call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4}), text("done")]
    )
    agent = Agent(name="calc", model=model, tools=[add])
    await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))


@pytest.mark.parametrize("checkpoint_backend", ["sqlite", "postgres"], indirect=True)
async def test_sigkill_during_forks_leaves_each_fork_absent_or_whole(
    checkpoint_backend: Backend,
) -> None:
    cp = checkpoint_backend.open()
    await _source(cp)
    source = (await cp.load("r1")).to_dict()
    expected = (await cp.fork("r1", "model", at_turn=2, tool_results={"call_add": "70"})).entries
    where = (
        str(checkpoint_backend.path)
        if checkpoint_backend.name == "sqlite"
        else checkpoint_backend.dsn
    )
    start = 0
    for trial in range(TRIALS):
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            FORKER,
            checkpoint_backend.name,
            where,
            checkpoint_backend.prefix,
            str(start),
            stdout=asyncio.subprocess.PIPE,
        )
        assert child.stdout is not None
        for _ in range(FORKS_BEFORE_KILL[trial]):
            line = await asyncio.wait_for(child.stdout.readline(), timeout=60)
            assert line, "the forking process ended before it was killed"
        os.kill(child.pid, signal.SIGKILL)
        assert await asyncio.wait_for(child.wait(), timeout=60) == -signal.SIGKILL
        start += 10_000
    await cp.close()

    cp = checkpoint_backend.open()  # a fresh reader of what the killed processes left
    whole = 0
    for trial in range(TRIALS):
        for i in range(trial * 10_000, trial * 10_000 + FORKS_BEFORE_KILL[trial] + 3):
            fork = await cp.load(f"f{i}")
            if fork is None:
                continue
            assert fork.entries == expected and fork.status == "interrupted" and fork.turns == 2
            whole += 1
    assert whole >= sum(FORKS_BEFORE_KILL)  # every fork the process reported is there, whole
    assert (await cp.load("r1")).to_dict() == source  # the source never changed
