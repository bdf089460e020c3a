"""The edges of a run's completion: cancellation during the completed save (C12) and a
replay that repairs a lost session append after the session moved on (C8)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    RunHead,
    Runner,
    SessionConflict,
    TranscriptEntry,
)
from lovia.testing import ScriptedProvider, text
from tests.faults import FaultySession, fail_first_append_of


class SlowCompletion(InMemoryCheckpointer):
    """Holds the "completed" save until released, so the run can be cancelled during it."""

    def __init__(self) -> None:
        super().__init__()
        self.saving_completed = asyncio.Event()
        self.release = asyncio.Event()

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        if head.status == "completed":
            self.saving_completed.set()
            await self.release.wait()
        await super().append(run_id, entries, head)


async def test_cancelling_during_the_completed_save_leaves_the_run_completed() -> None:
    """C12: once the completed head lands, nothing overwrites it with "interrupted"."""
    cp = SlowCompletion()
    agent = Agent("a", model=ScriptedProvider([text("the answer")]))
    task = asyncio.ensure_future(
        Runner.run(agent, "q", checkpoint=CheckpointOptions(cp, "r1", lease=False))
    )
    await cp.saving_completed.wait()
    task.cancel()
    await asyncio.sleep(0)
    cp.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "completed" and snap.output == "the answer"


async def test_replay_repairs_a_lost_append_even_after_the_session_moved_on() -> None:
    """C8: the replay writes the run the crash kept out, although another run appended."""
    crash = fail_first_append_of(
        "r1", lambda: RuntimeError("crash between checkpoint completed and session append")
    )
    session = FaultySession(InMemorySession(), before=crash)
    cp = InMemoryCheckpointer()
    agent = Agent("a", model=ScriptedProvider([text("first answer")]))
    with pytest.raises(RuntimeError, match="crash"):
        await Runner.run(
            agent, "q1", session=session, session_id="u", checkpoint=CheckpointOptions(cp, "r1")
        )
    await session.append("u", [InputEntry(content="someone else")], run_id="other")
    replayed = await Runner.run(
        Agent("a", model=ScriptedProvider([])),
        "ignored",
        session=session,
        session_id="u",
        checkpoint=CheckpointOptions(cp, "r1"),
    )
    assert replayed.output == "first answer"
    assert [s.run_id for s in await session.segments("u")] == ["other", "r1"]


async def test_a_run_whose_append_conflicted_is_never_appended_by_a_replay() -> None:
    session = InMemorySession()
    cp = InMemoryCheckpointer()

    async def meanwhile(messages: Any) -> Any:
        await session.append("u", [InputEntry(content="someone else")], run_id="other")
        return text("stale answer")

    with pytest.raises(SessionConflict):
        await Runner.run(
            Agent("a", model=ScriptedProvider([meanwhile])),
            "q",
            session=session,
            session_id="u",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
    snap = await cp.load("r1")
    # failed, not completed: its answer is not in the session, and the run (with the user's
    # message) stays listed as unfinished instead of vanishing (issue 14, finding 3)
    assert snap is not None and snap.status == "failed"
    assert snap.error is not None and snap.error["type"] == "SessionConflict"
    assert [r.run_id for r in await cp.list_runs(statuses=["failed"])] == ["r1"]
    assert [e.text for e in snap.entries if isinstance(e, InputEntry)] == ["q"]
    for policy in ("resume", "resume_only"):
        with pytest.raises(SessionConflict):
            await Runner.run(
                Agent("a", model=ScriptedProvider([])),
                "q",
                session=session,
                session_id="u",
                checkpoint=CheckpointOptions(cp, "r1", if_run_exists=policy),
            )
    assert [s.run_id for s in await session.segments("u")] == ["other"]


async def test_a_resumed_turn_runs_its_calls_with_the_tools_of_the_agent_that_asked() -> None:
    """C10/C11: A asks for [transfer_to_b, slow] in one turn; the run stops during `slow`
    (the head names A with the transfer to B pending); on resume `slow` runs again with A's
    tools, then the run switches to B."""
    from lovia import CancelToken, RunCancelled, RunContext, ToolResultEntry, tool
    from lovia.testing import batch

    started = asyncio.Event()
    runs: list[str] = []

    @tool
    async def slow(ctx: RunContext[None]) -> str:
        runs.append(ctx.run_id)
        started.set()
        await asyncio.sleep(0 if len(runs) > 1 else 30)
        return "slow done"

    model = ScriptedProvider([batch(("transfer_to_b", {}), ("slow", {})), text("B answers")])
    b = Agent("b", model=model)
    a = Agent("a", model=model, tools=[slow], handoffs=[b])
    cp = InMemoryCheckpointer()
    token = CancelToken()
    task = asyncio.ensure_future(
        Runner.run(a, "go", cancel_token=token, checkpoint=CheckpointOptions(cp, "r"))
    )
    await started.wait()
    token.cancel("stop")
    with pytest.raises(RunCancelled):
        await task
    snap = await cp.load("r")
    assert snap is not None and snap.agent_name == "a" and snap.pending_handoff == "b"
    result = await Runner.run(a, [], checkpoint=CheckpointOptions(cp, "r"))
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert "slow done" in outputs and not any("unknown tool" in o for o in outputs)
    assert result.output == "B answers" and result.final_agent.name == "b"
