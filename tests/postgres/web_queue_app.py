"""The app of the web-hands-runs-to-workers test: ``lovia web --app
tests.postgres.web_queue_app:agent --workers`` and ``lovia worker --app
tests.postgres.web_queue_app:queue``.

The model is a ``ScriptedProvider`` turn chosen from the transcript (a call of ``step``,
then the answer), so whichever worker picks the run up, first or after a crash, says the
same. ``step`` appends ``start``/``end`` lines with its pid to ``LOVIA_TEST_TOOL_LOG`` and
sleeps ``LOVIA_TEST_STEP_SECONDS`` in between (long enough to kill a worker inside it).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from lovia import Agent, RunContext, ToolResultEntry, TranscriptEntry, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry
from lovia.workers import AgentQueue

ANSWER = "answered by a worker"


class StepThenAnswer:
    name = "step-then-answer"
    model = "step-then-answer"
    supports_json_schema = False

    async def stream(self, entries: Sequence[TranscriptEntry], **kwargs: Any) -> AsyncIterator[Any]:
        start = max(
            (i for i, e in enumerate(entries) if isinstance(e, InputEntry) and e.role == "user"),
            default=0,
        )
        done = any(isinstance(e, ToolResultEntry) for e in entries[start:])
        turn = text(ANSWER) if done else call("step", {}, call_id="s1")
        async for delta in ScriptedProvider([turn]).stream(entries, **kwargs):
            yield delta


def _log(line: str) -> None:
    path = os.environ.get("LOVIA_TEST_TOOL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


@tool
async def step(ctx: RunContext[Any]) -> str:
    """One slow step of the run."""
    _log(f"start {os.getpid()} {ctx.run_id}")
    await asyncio.sleep(float(os.environ.get("LOVIA_TEST_STEP_SECONDS", "0")))
    _log(f"end {os.getpid()} {ctx.run_id}")
    return "step done"


TALK = "one two three four five six seven eight nine ten"


class SlowTalker:
    """Answers ``TALK`` a character at a time, ``LOVIA_TEST_TOKEN_SECONDS`` (default 0.02)
    apart, as a model streams its tokens."""

    name = "slow-talker"
    model = "slow-talker"
    supports_json_schema = False

    async def stream(self, entries: Sequence[TranscriptEntry], **kwargs: Any) -> AsyncIterator[Any]:
        pause = float(os.environ.get("LOVIA_TEST_TOKEN_SECONDS", "0.02"))
        async for delta in ScriptedProvider([text(TALK)]).stream(entries, **kwargs):
            await asyncio.sleep(pause)
            yield delta


agent = Agent("helper", model=StepThenAnswer(), tools=[step])
talker = Agent("talker", model=SlowTalker())
queue = AgentQueue(agent, "postgresql://unset", lease_ttl=1.5, busy_retry_after=1.0)
talking = AgentQueue(talker, "postgresql://unset", lease_ttl=1.5, busy_retry_after=1.0)
