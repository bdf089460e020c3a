"""One arq worker process for the queue tests: ``python -m tests.postgres.queue_app QUEUE PREFIX``.

Each job is a run with two tool calls (``step`` 1, then ``step`` 2, then a final answer), from
a model that decides by the transcript alone, so any worker can resume any run. Every tool
execution is logged in PostgreSQL (``<prefix>tool_log``) with the worker's pid and the time it
started and ended, so the test can check that no run was driven by two workers at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
from arq.connections import RedisSettings
from arq.worker import Worker

from lovia import Agent, RunContext, ToolResultEntry, TranscriptEntry, tool
from lovia.messages import AssistantTurn
from lovia.stores.checkpoint import validate_id
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry
from lovia.workers import AgentQueue

STEP_SECONDS = 0.1
DSN = os.environ.get("LOVIA_TEST_POSTGRES_DSN", "")


class TwoSteps:
    """A provider that looks at the current run's part of the transcript and says what next."""

    name = "two-steps"
    model = "two-steps"
    supports_json_schema = False

    async def stream(self, entries: Sequence[TranscriptEntry], **kwargs: Any) -> AsyncIterator[Any]:
        start = max(
            (i for i, e in enumerate(entries) if isinstance(e, InputEntry) and e.role == "user"),
            default=0,
        )
        done = sum(isinstance(e, ToolResultEntry) for e in entries[start:])
        turn: AssistantTurn = (
            call("step", {"n": done + 1}, call_id=f"c{done + 1}") if done < 2 else text("done")
        )
        async for delta in ScriptedProvider([turn]).stream(entries, **kwargs):
            yield delta


def tool_log_table(prefix: str) -> str:
    return f'"{prefix}tool_log"'


def create_tool_log(prefix: str) -> None:
    with psycopg.connect(DSN, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {tool_log_table(prefix)} (id bigserial PRIMARY KEY, "
            "run_id text NOT NULL, n int NOT NULL, pid int NOT NULL, "
            "started double precision NOT NULL, ended double precision)"
        )


def build_agent(prefix: str, log: dict[str, Any]) -> Agent:
    table = tool_log_table(prefix)

    @tool(parallel=False)
    async def step(ctx: RunContext[Any], n: int) -> str:
        """Do step n of the job (slow enough that a worker can be killed inside it)."""
        conn: psycopg.AsyncConnection[Any] = log["conn"]
        async with log["lock"]:
            cur = await conn.execute(
                f"INSERT INTO {table} (run_id, n, pid, started) VALUES (%s, %s, %s, %s) "
                "RETURNING id",
                (ctx.run_id, n, os.getpid(), time.time()),
            )
            row = await cur.fetchone()
        await asyncio.sleep(STEP_SECONDS)
        async with log["lock"]:
            assert row is not None
            await conn.execute(
                f"UPDATE {table} SET ended = %s WHERE id = %s", (time.time(), row[0])
            )
        return f"step {n} of {ctx.run_id} done"

    return Agent("worker", model=TwoSteps(), tools=[step])


def main(queue_name: str, prefix: str) -> None:
    validate_id(queue_name, "queue name")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    log: dict[str, Any] = {}
    queue = AgentQueue(
        build_agent(prefix, log),
        DSN,
        table_prefix=prefix,
        queue_name=queue_name,
        lease_ttl=3.0,
        busy_retry_after=2.0,
    )

    async def startup(ctx: dict[str, Any]) -> None:
        log["conn"] = await psycopg.AsyncConnection.connect(DSN, autocommit=True)
        log["lock"] = asyncio.Lock()
        await queue.startup(ctx)

    async def shutdown(ctx: dict[str, Any]) -> None:
        await queue.shutdown(ctx)
        await log["conn"].close()

    settings = queue.worker_settings(
        job_timeout=5,  # arq redelivers a dead worker's job after job_timeout + 10 s
        max_tries=20,
        max_jobs=4,
        poll_delay=0.05,
        on_startup=startup,
        on_shutdown=shutdown,
        redis_settings=RedisSettings(host="127.0.0.1", port=6379),
    )
    Worker(**settings).run()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
