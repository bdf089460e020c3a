"""Resuming checkpointed runs: rebuild (C10), handoffs (C11), the success order (C12), and
runs that end by cancellation or failure."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from lovia import (
    Agent,
    AssistantTextEntry,
    CancelToken,
    Checkpointer,
    CheckpointOptions,
    InMemorySession,
    InputEntry,
    RunCancelled,
    RunContext,
    RunHead,
    Runner,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UserError,
    tool,
)
from lovia.messages import Message
from lovia.testing import ScriptedProvider, batch, call, text
from tests.faults import FaultySession, fail_appends
from tests.stores.backends import checkpoint_backend, checkpointer

from .checkpoint_jobs import RESUME_SCRIPT, Job, interrupt

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name


# -- C10: rebuilding the run --------------------------------------------------------------


async def test_resume_renders_dynamic_instructions_again_with_the_new_deps(
    checkpointer: Checkpointer,
) -> None:
    """C4/C10: deps are never snapshotted; the system prompt is rendered from the new ones."""
    job = Job()

    def instructions(ctx: RunContext[Any]) -> str:
        return f"You work for {ctx.deps}."

    await interrupt(
        job, checkpointer, "r1", deps="tenant-a", agent_kwargs={"instructions": instructions}
    )
    agent, model = job.agent(list(RESUME_SCRIPT), instructions=instructions)
    await Runner.run(agent, [], deps="tenant-b", checkpoint=CheckpointOptions(checkpointer, "r1"))
    system = [m for m in model.calls[0] if m.role == "system"]
    assert system == [Message(role="system", content="You work for tenant-b.")]
    snap = await checkpointer.load("r1")
    assert snap is not None
    assert all("tenant" not in str(getattr(e, "content", "")) for e in snap.entries)


async def test_resume_loads_the_session_history_again(checkpointer: Checkpointer) -> None:
    """C10: the model sees the history as the session holds it now, then the run's entries."""
    session = InMemorySession()
    await session.append("s", [InputEntry(role="user", content="earlier question")], run_id="r0")
    job = Job()
    await interrupt(job, checkpointer, "r1", session=session, session_id="s")
    await session.append("s", [InputEntry(role="user", content="written meanwhile")], run_id="rx")
    agent, model = job.agent(list(RESUME_SCRIPT))
    result = await Runner.run(
        agent, [], session=session, session_id="s", checkpoint=CheckpointOptions(checkpointer, "r1")
    )
    users = [m.content for m in model.calls[0] if m.role == "user"]
    assert users == ["earlier question", "written meanwhile", "do the job"]
    segments = await session.segments("s")
    assert [s.run_id for s in segments] == ["r0", "rx", "r1"]
    assert segments[-1].entries == result.entries


async def test_dangling_call_runs_again_with_its_turn_number(checkpointer: Checkpointer) -> None:
    """C10: the interrupted call of turn 2 runs again as turn 2; step 1 never runs again."""
    job = Job()
    await interrupt(job, checkpointer, "r1")
    agent, _ = job.agent(list(RESUME_SCRIPT))
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert job.executed == [("step", 1, {"n": 1}), ("stop", 2, {}), ("stop", 2, {})]
    results = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert [r.output for r in results] == ["step 1 done", "stop passed"]
    assert result.turns == 3


async def test_only_the_calls_without_results_run_again(checkpointer: Checkpointer) -> None:
    """C10/E2: of one turn's three calls, the two finished ones are never executed again."""
    job = Job()
    script = [batch(("step", {"n": 1}, "c1"), ("step", {"n": 2}, "c2"), ("stop", {}, "c3"))]
    agent, _ = job.agent(script)
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    snap = await checkpointer.load("r1")
    assert snap is not None
    assert [e.call_id for e in snap.entries if isinstance(e, ToolResultEntry)] == ["c1", "c2"]
    agent, _ = job.agent(list(RESUME_SCRIPT))
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert job.names() == ["step", "step", "stop", "stop"]
    paired = {e.call_id for e in result.entries if isinstance(e, ToolResultEntry)}
    assert paired == {"c1", "c2", "c3"}
    assert result.output == "all done"


async def test_a_starting_tool_finds_its_turn_and_earlier_results_checkpointed(
    checkpointer: Checkpointer,
) -> None:
    """Contract: when a tool starts, the checkpoint holds every call of that model turn and
    every result that finished before it, including earlier calls of the same turn."""
    seen: dict[str, tuple[list[str], list[str]]] = {}

    @tool(parallel=False)
    async def look(ctx: RunContext[Any], label: str) -> str:
        """Record what the checkpoint holds now."""
        snap = await checkpointer.load(ctx.run_id)
        assert snap is not None
        calls = [e.call_id for e in snap.entries if isinstance(e, ToolCallEntry)]
        results = [e.call_id for e in snap.entries if isinstance(e, ToolResultEntry)]
        seen[label] = (calls, results)
        return label

    script = [
        call("look", {"label": "first turn"}, call_id="a"),
        batch(
            ("look", {"label": "x"}, "x"),
            ("look", {"label": "y"}, "y"),
            ("look", {"label": "z"}, "z"),
        ),
        text("done"),
    ]
    agent = Agent(name="a", model=ScriptedProvider(script), tools=[look])
    await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert seen["first turn"] == (["a"], [])
    assert seen["x"] == (["a", "x", "y", "z"], ["a"])
    assert seen["y"] == (["a", "x", "y", "z"], ["a", "x"])
    assert seen["z"] == (["a", "x", "y", "z"], ["a", "x", "y"])


async def test_a_run_whose_final_answer_was_saved_finishes_without_the_model(
    checkpointer: Checkpointer,
) -> None:
    """C2/C10: the answer is saved right after the model turn; a crash before "completed"
    finishes from the saved answer, so a stored `running` run with an answer needs no model."""
    entries: list[TranscriptEntry] = [
        InputEntry(role="user", content="go"),
        AssistantTextEntry(content="saved answer"),
    ]
    await checkpointer.append("r1", entries, RunHead(agent_name="worker", turns=1))
    agent, model = Job().agent([])
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "saved answer" and model.calls == []
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.status == "completed"


# -- C11: handoffs ------------------------------------------------------------------------


def triage_and_billing(job: Job, triage_script: list[Any], billing_script: list[Any]) -> Agent:
    billing = Agent(name="billing", model=ScriptedProvider(billing_script), tools=job.tools())
    return Agent(
        name="triage", model=ScriptedProvider(triage_script), tools=job.tools(), handoffs=[billing]
    )


async def test_resume_continues_with_the_agent_handed_off_to(checkpointer: Checkpointer) -> None:
    """C11: the snapshot names the active agent; the runner finds it in the handoff graph."""
    job = Job()
    first = triage_and_billing(job, [call("transfer_to_billing", {})], [call("stop", {})])
    with pytest.raises(RunCancelled):
        await Runner.run(first, "refund me", checkpoint=CheckpointOptions(checkpointer, "r1"))
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.agent_name == "billing"
    triage_model = ScriptedProvider([])
    billing_model = ScriptedProvider([text("refunded")])
    billing = Agent(name="billing", model=billing_model, tools=job.tools())
    again = Agent(name="triage", model=triage_model, tools=job.tools(), handoffs=[billing])
    result = await Runner.run(again, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "refunded" and result.final_agent.name == "billing"
    assert triage_model.calls == [] and len(billing_model.calls) == 1
    assert job.names() == ["stop", "stop"]


async def test_resume_of_an_in_flight_run_whose_agent_is_gone_is_a_user_error(
    checkpointer: Checkpointer,
) -> None:
    """C11: a renamed in-flight agent fails hard: nothing runs, the snapshot stays as it was."""
    job = Job()
    first = triage_and_billing(job, [call("transfer_to_billing", {})], [call("stop", {})])
    with pytest.raises(RunCancelled):
        await Runner.run(first, "refund me", checkpoint=CheckpointOptions(checkpointer, "r1"))
    before = await checkpointer.load("r1")
    renamed = Agent(name="payments", model=ScriptedProvider([]), tools=job.tools())
    entry_model = ScriptedProvider([])
    again = Agent(name="triage", model=entry_model, tools=job.tools(), handoffs=[renamed])
    with pytest.raises(UserError, match="billing") as info:
        await Runner.run(again, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert info.value.hint
    assert job.names() == ["stop"] and entry_model.calls == []
    assert await checkpointer.load("r1") == before


async def test_replay_of_a_completed_run_whose_agent_is_gone_falls_back_with_a_warning(
    checkpointer: Checkpointer, caplog: pytest.LogCaptureFixture
) -> None:
    """C11: finished work never breaks because of a deploy; the `lovia` logger says why."""
    job = Job()
    first = triage_and_billing(job, [call("transfer_to_billing", {})], [text("refunded")])
    await Runner.run(first, "refund me", checkpoint=CheckpointOptions(checkpointer, "r1"))
    alone = Agent(name="triage", model=ScriptedProvider([]))
    with caplog.at_level(logging.WARNING, logger="lovia"):
        result = await Runner.run(alone, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "refunded" and result.final_agent is alone
    warnings = [r for r in caplog.records if r.name.startswith("lovia")]
    assert warnings and "billing" in warnings[0].getMessage()


# -- C12: the order on success ------------------------------------------------------------


def _gone() -> OSError:
    return OSError("the session database went away")


async def test_checkpoint_is_completed_before_the_session_append(
    checkpointer: Checkpointer,
) -> None:
    """C12: when the append fails the checkpoint already says completed; a replay repairs it."""
    real = InMemorySession()
    job = Job()
    agent, _ = job.agent([call("step", {"n": 1}), text("the answer")])
    opts = CheckpointOptions(checkpointer, "r1", delete_on_success=True)
    with pytest.raises(OSError):
        await Runner.run(
            agent,
            "go",
            session=FaultySession(real, before=fail_appends(-1, _gone), versioned=False),
            session_id="s",
            checkpoint=opts,
        )
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.status == "completed"  # kept: the append failed (C9)
    assert await real.segments("s") == []
    agent, model = job.agent([])
    result = await Runner.run(agent, [], session=real, session_id="s", checkpoint=opts)
    assert result.output == "the answer" and model.calls == []
    segments = await real.segments("s")
    assert [s.run_id for s in segments] == ["r1"] and segments[0].entries == snap.entries
    assert await checkpointer.load("r1") is None  # delete_on_success after the repair
    assert job.names() == ["step"]


# -- runs that stop -----------------------------------------------------------------------


async def test_a_cancelled_run_is_interrupted_and_resumable(checkpointer: Checkpointer) -> None:
    """A tool that cancels and returns keeps its result; the head says interrupted."""
    token = CancelToken()

    @tool
    def pause(ctx: RunContext[Any]) -> str:
        """Ask the run to stop."""
        ctx.cancel_token.cancel("operator pressed stop")
        return "paused"

    script = [call("pause", {}), text("never reached")]
    agent = Agent(name="a", model=ScriptedProvider(script), tools=[pause])
    with pytest.raises(RunCancelled):
        await Runner.run(
            agent, "go", cancel_token=token, checkpoint=CheckpointOptions(checkpointer, "r1")
        )
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.status == "interrupted"
    assert [e.output for e in snap.entries if isinstance(e, ToolResultEntry)] == ["paused"]
    agent = agent.clone(model=ScriptedProvider([text("resumed")]))
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "resumed"


async def test_a_cancelled_task_leaves_a_resumable_run(checkpointer: Checkpointer) -> None:
    """Cancelling the awaiting task: CancelledError to the awaiter; the run resumes later."""
    started = asyncio.Event()
    runs: list[int] = []

    @tool
    async def slow(ctx: RunContext[Any]) -> str:
        """Work for a long time."""
        runs.append(ctx.turn)
        started.set()
        if len(runs) == 1:
            await asyncio.Event().wait()  # until cancelled
        return "slow done"

    agent = Agent(name="a", model=ScriptedProvider([call("slow", {})]), tools=[slow])
    task = asyncio.create_task(
        Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.status in ("running", "interrupted")
    agent = agent.clone(model=ScriptedProvider([text("finished")]))
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "finished" and runs == [1, 1]


# -- on_resume: what an in-flight call means ----------------------------------------------


def once_then_stop(executed: list[str], **options: Any) -> Any:
    @tool(**options)
    def send(ctx: RunContext[Any], to: str) -> str:
        """Send a message."""
        executed.append(to)
        if len(executed) == 1:
            raise RunCancelled("the worker stopped while sending")
        return f"sent to {to}"

    return send


async def test_on_resume_fail_refuses_to_run_an_in_flight_call_again(
    checkpointer: Checkpointer,
) -> None:
    """E2: a tool that must not run twice stops the resume with UserError instead."""
    executed: list[str] = []
    send = once_then_stop(executed, on_resume="fail")
    agent = Agent(name="a", model=ScriptedProvider([call("send", {"to": "ada"})]), tools=[send])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.started_calls == ("call_send",)
    agent = agent.clone(model=ScriptedProvider([text("never")]))
    with pytest.raises(UserError, match="call_send") as info:
        await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert info.value.hint and executed == ["ada"]


async def test_on_resume_callable_can_record_a_result_without_running_the_tool(
    checkpointer: Checkpointer,
) -> None:
    """E2: the tool checks the outside world and reports what already happened."""
    executed: list[str] = []

    def already_sent(call: ToolCallEntry, ctx: RunContext[Any]) -> str:
        return f"already sent in run {ctx.run_id}"

    send = once_then_stop(executed, on_resume=already_sent)
    agent = Agent(name="a", model=ScriptedProvider([call("send", {"to": "ada"})]), tools=[send])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    model = ScriptedProvider([text("done")])
    result = await Runner.run(
        agent.clone(model=model), [], checkpoint=CheckpointOptions(checkpointer, "r1")
    )
    assert executed == ["ada"]
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outputs == ["already sent in run r1"]
    assert model.calls[0][-1].content == "already sent in run r1"


class SlowCommit:
    """A checkpointer whose writes land a moment after the caller stopped waiting, as a
    SQLite commit on the store's thread does when the awaiting task is cancelled."""

    def __init__(self, inner: Checkpointer) -> None:
        self.inner = inner
        self.gate: asyncio.Event | None = None
        self.waiting = asyncio.Event()

    async def _append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        if self.gate is not None:
            self.waiting.set()
            await self.gate.wait()
        await self.inner.append(run_id, entries, head)

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        await asyncio.shield(asyncio.ensure_future(self._append(run_id, list(entries), head)))

    async def load(self, run_id: str) -> Any:
        return await self.inner.load(run_id)

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)


async def test_cancelling_a_run_during_a_save_stores_each_entry_once(
    checkpointer: Checkpointer,
) -> None:
    """C2: a save cut off by task cancellation still lands; the final save must not add its
    entries a second time."""
    slow = SlowCommit(checkpointer)

    @tool
    async def arm(ctx: RunContext[Any]) -> str:
        """Make the next save slow."""
        slow.gate = asyncio.Event()
        return "armed"

    agent = Agent(name="a", model=ScriptedProvider([call("arm", {}), text("x")]), tools=[arm])
    task = asyncio.create_task(Runner.run(agent, "go", checkpoint=CheckpointOptions(slow, "r1")))
    await slow.waiting.wait()  # the save of arm's result is in flight
    task.cancel()
    await asyncio.sleep(0)
    assert slow.gate is not None
    slow.gate.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(5):
        await asyncio.sleep(0)  # let every write that was started land
    snap = await checkpointer.load("r1")
    assert snap is not None
    results = [e for e in snap.entries if isinstance(e, ToolResultEntry)]
    assert [r.output for r in results] == ["armed"]
    resumed = await Runner.run(
        agent.clone(model=ScriptedProvider([text("done")])),
        [],
        checkpoint=CheckpointOptions(checkpointer, "r1"),
    )
    assert resumed.output == "done"
    assert [type(e).__name__ for e in resumed.entries] == [
        "InputEntry",
        "ToolCallEntry",
        "ToolResultEntry",
        "AssistantTextEntry",
    ]


async def test_parallel_calls_keep_the_results_that_finished_before_the_stop(
    checkpointer: Checkpointer,
) -> None:
    """C2/C10: of two concurrent calls, the one that finished is saved and never runs again;
    the one that stopped the run runs again on resume."""
    runs: list[str] = []
    fast_saved = asyncio.Event()

    @tool
    async def fast(ctx: RunContext[Any]) -> str:
        """Finish at once."""
        runs.append("fast")
        return "fast done"

    @tool
    async def slow(ctx: RunContext[Any]) -> str:
        """Stop the run the first time, after fast's result is checkpointed."""
        runs.append("slow")
        if runs.count("slow") == 1:
            for _ in range(5_000):  # until fast's result is in the checkpoint
                snap = await checkpointer.load(ctx.run_id)
                if snap and any(isinstance(e, ToolResultEntry) for e in snap.entries):
                    fast_saved.set()
                    break
                await asyncio.sleep(0.001)
            raise RunCancelled("stopped while slow ran")
        return "slow done"

    script = [batch(("fast", {}, "f"), ("slow", {}, "s"))]
    agent = Agent(name="a", model=ScriptedProvider(script), tools=[fast, slow])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert fast_saved.is_set()
    agent = agent.clone(model=ScriptedProvider([text("both done")]))
    result = await Runner.run(agent, [], checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert runs == ["fast", "slow", "slow"]
    outputs = {e.call_id: e.output for e in result.entries if isinstance(e, ToolResultEntry)}
    assert outputs == {"f": "fast done", "s": "slow done"}
