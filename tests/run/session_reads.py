"""Checkpointed runs of one session, ``u1``, for the tests that count how often a run reads
its session's history (issue 34): on SQLite (``tests/run``) and PostgreSQL
(``tests/postgres``)."""

from __future__ import annotations

from typing import Any

from lovia import Agent, CheckpointOptions, Runner, RunResult
from lovia.stores.checkpoint import RunHead
from lovia.testing import ScriptedProvider, text
from lovia.transcript import InputEntry

SESSION = "u1"


async def run_in(agent: Agent, input: Any, session: Any, cp: Any, run_id: str) -> RunResult:
    """``agent`` run on ``input`` in session u1, checkpointed as ``run_id``."""
    return await Runner.run(
        agent, input, session=session, session_id=SESSION, checkpoint=CheckpointOptions(cp, run_id)
    )


async def answered(session: Any, cp: Any) -> None:
    """u1 holds one answered run, r0: "hi", then "one"."""
    await run_in(Agent("a", model=ScriptedProvider([text("one")])), "hi", session, cp, "r0")


async def stopped(cp: Any, run_id: str, question: str) -> None:
    """``run_id`` stored as a run of u1 stopped before its first model call."""
    head = RunHead("a", status="interrupted", session_id=SESSION, started_at=1000.0)
    await cp.append(run_id, [InputEntry(role="user", content=question)], head)


def reached_the_model(model: ScriptedProvider) -> bool:
    """Whether ``model``'s one call carried r0's exchange (the session's history)."""
    [request] = model.calls
    return "hi" in str(request) and "one" in str(request)
