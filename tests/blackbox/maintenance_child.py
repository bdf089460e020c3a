"""A process that appends runs to one session and trims and rewinds it, without end, until
it is killed. Argument: JSON {"kind", "path" | "dsn" + "prefix", "seed"}. Prints one line per
finished operation (flushed), so the parent knows it is busy."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from typing import Any

from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry


def open_session(spec: dict[str, Any]) -> Any:
    if spec["kind"] == "postgres":
        from lovia import PostgresSession

        return PostgresSession(spec["dsn"], table_prefix=spec["prefix"])
    return SQLiteSession(spec["path"], wal=spec["kind"] == "sqlite-wal")


def run_entries(n: int) -> list[Any]:
    calls = [ToolCallEntry(call_id=f"c{n}-{i}", name="t", arguments="{}") for i in range(3)]
    results = [
        ToolResultEntry(call_id=c.call_id, output=f"{c.call_id}:" + "o" * 3000) for c in calls
    ]
    return [
        InputEntry(role="user", content=f"q{n}"),
        *calls,
        *results,
        AssistantTextEntry(content=f"a{n}"),
    ]


async def main(spec: dict[str, Any]) -> None:
    rng = random.Random(spec["seed"])
    session = open_session(spec)
    n = spec["seed"] * 100_000
    while True:
        n += 1
        op = rng.random()
        if op < 0.6:
            await session.append("s", run_entries(n), run_id=f"r{n}")
        elif op < 0.8:
            await session.trim_tool_results("s", keep_chars=rng.choice([0, 10, 100]), keep_runs=1)
        else:
            flat = await session.load("s")
            await session.rewind("s", keep_entries=rng.randint(0, max(len(flat), 1)))
        print(n, flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
