"""The worker app of the queue fault tests and benchmarks:
``lovia worker --app tests.postgres.queue_app:queue --db DSN``.

Each run makes two tool calls (``step`` 1, then 2, then a final answer) from a model that
decides by the transcript alone, so any worker can resume any run. Every tool execution is
logged in ``queue_tool_log`` (through ``LOVIA_QUEUE_LOG_DSN``, a direct connection, so the
faults injected on the worker's own connections never lose a log line) with the worker's
pid and when it started and ended.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg

from lovia import Agent, RunContext, ToolResultEntry, TranscriptEntry, tool
from lovia.messages import AssistantTurn
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry
from lovia.workers import AgentQueue

STEP_SECONDS = float(os.environ.get("LOVIA_QUEUE_STEP_SECONDS", "0.3"))
LOG_DSN = os.environ.get("LOVIA_QUEUE_LOG_DSN", "")
TOOL_LOG_DDL = (
    "CREATE TABLE IF NOT EXISTS queue_tool_log (id bigserial PRIMARY KEY, run_id text NOT "
    "NULL, n int NOT NULL, pid int NOT NULL, started double precision NOT NULL, "
    "ended double precision)"
)


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


async def _log(query: str, params: tuple[Any, ...]) -> Any:
    async with await psycopg.AsyncConnection.connect(LOG_DSN, autocommit=True) as conn:
        cur = await conn.execute(query, params)
        return await cur.fetchone() if cur.description else None


@tool(parallel=False)
async def step(ctx: RunContext[Any], n: int) -> str:
    """Do step n of the run (slow enough that a worker can be hit inside it)."""
    row = await _log(
        "INSERT INTO queue_tool_log (run_id, n, pid, started) VALUES (%s, %s, %s, %s) RETURNING id",
        (ctx.run_id, n, os.getpid(), time.time()),
    )
    await asyncio.sleep(STEP_SECONDS)
    await _log("UPDATE queue_tool_log SET ended = %s WHERE id = %s", (time.time(), row[0]))
    return f"step {n} of {ctx.run_id} done"


queue = AgentQueue(
    Agent("worker", model=TwoSteps(), tools=[step]),
    LOG_DSN or "postgresql://unset",
    lease_ttl=1.5,
    busy_retry_after=1.0,
    max_attempts=20,
)
