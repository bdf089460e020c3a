"""Checkpointed runs through the Runner: the if_run_exists table (C5), re-submission (C6, C7),
replay (C8), delete_on_success and resume_from (C9), and the sharp edges E1-E4."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    AgentHooks,
    Checkpointer,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    ProviderError,
    RunCancelled,
    RunContext,
    Runner,
    RunSnapshot,
    ToolResultEntry,
    Usage,
    UserError,
    tool,
)
from lovia.events import RunCompleted, RunEvent
from lovia.messages import AssistantTurn
from lovia.testing import ScriptedProvider, call, text
from tests.stores.backends import checkpoint_backend, checkpointer

from .checkpoint_jobs import RESUME_SCRIPT, Job, interrupt

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name


async def completed_run(cp: Checkpointer, run_id: str, **kwargs: Any) -> tuple[Job, Any]:
    job = Job()
    final = AssistantTurn("the answer", usage=Usage(3, 2), finish_reason="stop")
    agent, _ = job.agent([call("step", {"n": 1}), final])
    result = await Runner.run(
        agent, "do the job", checkpoint=CheckpointOptions(cp, run_id), **kwargs
    )
    return job, result


# -- C5: the if_run_exists table ----------------------------------------------------------


async def test_resume_with_a_stored_interrupted_run_continues_it(
    checkpointer: Checkpointer,
) -> None:
    """C5 resume/exists, C6: the re-submitted call finishes the run."""
    job = Job()
    await interrupt(job, checkpointer, "r1")
    agent, model = job.agent(list(RESUME_SCRIPT))
    result = await Runner.run(agent, "do the job", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "all done"
    assert result.turns == 3
    assert job.names() == ["step", "stop", "stop"]
    assert len(model.calls) == 1
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.status == "completed" and snap.output == "all done"


async def test_resume_with_a_stored_completed_run_replays_it(checkpointer: Checkpointer) -> None:
    """C5 resume/exists (completed), C6: the saved answer comes back without the model."""
    job, first = await completed_run(checkpointer, "r1")
    agent, model = job.agent([])
    again = await Runner.run(agent, "do the job", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert again.output == first.output == "the answer"
    assert again.entries == first.entries
    assert model.calls == []
    assert job.names() == ["step"]


async def test_resume_with_nothing_stored_starts_a_new_run(checkpointer: Checkpointer) -> None:
    """C5 resume/not stored."""
    job = Job()
    agent, _ = job.agent([text("fresh")])
    result = await Runner.run(agent, "hi", checkpoint=CheckpointOptions(checkpointer, "new"))
    assert result.output == "fresh"
    snap = await checkpointer.load("new")
    assert snap is not None and snap.status == "completed"
    assert snap.entries[0] == InputEntry(role="user", content="hi")


async def test_restart_drops_the_stored_run_and_starts_again(checkpointer: Checkpointer) -> None:
    """C5 restart/exists: the old entries are gone, the model runs from the new input."""
    await completed_run(checkpointer, "r1")
    job = Job()
    agent, model = job.agent([text("second take")])
    opts = CheckpointOptions(checkpointer, "r1", if_run_exists="restart")
    result = await Runner.run(agent, "new input", checkpoint=opts)
    assert result.output == "second take"
    assert len(model.calls) == 1
    snap = await checkpointer.load("r1")
    assert snap is not None
    assert snap.entries[0] == InputEntry(role="user", content="new input")
    assert snap.turns == 1 and snap.output == "second take"


async def test_restart_with_nothing_stored_starts_a_new_run(checkpointer: Checkpointer) -> None:
    """C5 restart/not stored."""
    agent, _ = Job().agent([text("ok")])
    opts = CheckpointOptions(checkpointer, "r1", if_run_exists="restart")
    assert (await Runner.run(agent, "go", checkpoint=opts)).output == "ok"


async def test_fail_with_a_stored_run_raises_and_leaves_it_unchanged(
    checkpointer: Checkpointer,
) -> None:
    """C5 fail/exists: UserError with a hint; the stored snapshot is untouched."""
    job = Job()
    await interrupt(job, checkpointer, "r1")
    before = await checkpointer.load("r1")
    agent, model = job.agent([text("never")])
    opts = CheckpointOptions(checkpointer, "r1", if_run_exists="fail")
    with pytest.raises(UserError, match="r1") as info:
        await Runner.run(agent, "go", checkpoint=opts)
    assert info.value.hint
    assert model.calls == []
    assert await checkpointer.load("r1") == before


async def test_fail_with_nothing_stored_starts_a_new_run(checkpointer: Checkpointer) -> None:
    """C5 fail/not stored."""
    agent, _ = Job().agent([text("ok")])
    opts = CheckpointOptions(checkpointer, "r1", if_run_exists="fail")
    assert (await Runner.run(agent, "go", checkpoint=opts)).output == "ok"


async def test_resume_only_with_a_stored_run_continues_it(checkpointer: Checkpointer) -> None:
    """C5 resume_only/exists, C7: continue a known run with no new input."""
    job = Job()
    await interrupt(job, checkpointer, "r1")
    agent, _ = job.agent(list(RESUME_SCRIPT))
    opts = CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only")
    result = await Runner.run(agent, [], checkpoint=opts)
    assert result.output == "all done"
    assert result.entries[0] == InputEntry(role="user", content="do the job")


async def test_resume_only_with_a_completed_run_replays_it(checkpointer: Checkpointer) -> None:
    """C5 resume_only/exists (completed): continuing a finished run replays it."""
    job, first = await completed_run(checkpointer, "r1")
    agent, model = job.agent([])
    opts = CheckpointOptions(checkpointer, "r1", if_run_exists="resume_only")
    result = await Runner.run(agent, [], checkpoint=opts)
    assert result.replayed and result.output == first.output and model.calls == []


async def test_resume_only_with_nothing_stored_raises_and_stores_nothing(
    checkpointer: Checkpointer,
) -> None:
    """C5 resume_only/not stored: UserError, and no snapshot appears."""
    agent, model = Job().agent([text("never")])
    opts = CheckpointOptions(checkpointer, "ghost", if_run_exists="resume_only")
    with pytest.raises(UserError, match="ghost") as info:
        await Runner.run(agent, [], checkpoint=opts)
    assert info.value.hint
    assert model.calls == []
    assert await checkpointer.load("ghost") is None


async def test_resume_only_with_nothing_stored_ends_a_stream_with_run_failed() -> None:
    """The one-terminal-event rule holds for an error before the first turn."""
    agent, _ = Job().agent([])
    opts = CheckpointOptions(InMemoryCheckpointer(), "ghost", if_run_exists="resume_only")
    handle = Runner.stream(agent, [], checkpoint=opts)
    events = [e async for e in handle]
    assert [e.type for e in events] == ["run_failed"]
    with pytest.raises(UserError):
        await handle.result()


def test_unknown_if_run_exists_policy_is_a_user_error() -> None:
    """C5: only the four policies exist."""
    with pytest.raises(UserError, match="overwrite") as info:
        CheckpointOptions(InMemoryCheckpointer(), "r", if_run_exists="overwrite")  # type: ignore[arg-type]
    assert info.value.hint


async def test_resume_continues_a_failed_run(checkpointer: Checkpointer) -> None:
    """Under "resume" a failed snapshot is resumed, not replayed; its error was recorded."""
    job = Job()
    broken = ScriptedProvider([call("step", {"n": 1}), RuntimeError("provider went away")])
    agent = job.agent([])[0].clone(model=broken)
    with pytest.raises(ProviderError):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.status == "failed"
    assert snap.error is not None and snap.error["type"] == "ProviderError"
    assert "provider went away" in snap.error["message"]
    agent2, model = job.agent([text("recovered")])
    result = await Runner.run(agent2, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "recovered"
    assert job.names() == ["step"]  # step 1 had its result: never run again
    assert len(model.calls) == 1


# -- C7: new input is ignored on resume ---------------------------------------------------


async def test_new_input_is_ignored_when_a_run_resumes(checkpointer: Checkpointer) -> None:
    """C7: the transcript already holds the original input."""
    job = Job()
    await interrupt(job, checkpointer, "r1")
    agent, model = job.agent(list(RESUME_SCRIPT))
    result = await Runner.run(
        agent, "a completely different request", checkpoint=CheckpointOptions(checkpointer, "r1")
    )
    prompt = model.calls[0]
    assert all("different request" not in str(m.content) for m in prompt)
    assert [m.content for m in prompt if m.role == "user"] == ["do the job"]
    assert result.entries[0] == InputEntry(role="user", content="do the job")


# -- C8: replay ---------------------------------------------------------------------------


async def test_replay_calls_no_model_no_hooks_no_output_guardrails(
    checkpointer: Checkpointer,
) -> None:
    """C8: hooks and output guardrails already ran; a guardrail that would now trip does not."""
    job, first = await completed_run(checkpointer, "r1")
    seen: list[str] = []
    hooks = AgentHooks()

    @hooks.on_any
    def record(event: RunEvent, ctx: RunContext[Any]) -> None:
        seen.append(event.type)

    guard_calls: list[Any] = []

    def refuse_everything(output: Any, ctx: RunContext[Any]) -> str:
        guard_calls.append(output)
        return "this answer is no longer allowed"

    agent, model = job.agent([], hooks=hooks, output_guardrails=[refuse_everything])
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "the answer"
    assert model.calls == []  # an empty script raises if it is called
    assert seen == [] and guard_calls == []
    assert result.usage == first.usage and result.usage.total_tokens > 0
    assert result.turns == first.turns
    assert first.finish_reason == "stop" and result.finish_reason is None


async def test_replay_streams_only_run_completed(checkpointer: Checkpointer) -> None:
    """C8: a replay re-sends only the terminal event."""
    job, _ = await completed_run(checkpointer, "r1")
    agent, _ = job.agent([])
    handle = Runner.stream(agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    events = [e async for e in handle]
    assert [type(e) for e in events] == [RunCompleted]
    assert (await handle.result()).output == "the answer"


async def test_replay_applies_the_session_append_again_idempotently(
    checkpointer: Checkpointer,
) -> None:
    """C8/S5: the session gets the run once, however often it is replayed."""
    session = InMemorySession()
    job, first = await completed_run(checkpointer, "r1", session=session, session_id="s")
    agent, _ = job.agent([])
    for _ in range(2):
        await Runner.run(
            agent,
            "go",
            session=session,
            session_id="s",
            checkpoint=CheckpointOptions(checkpointer, "r1"),
        )
    segments = await session.segments("s")
    assert [s.run_id for s in segments] == ["r1"]
    assert segments[0].entries == first.entries


# -- C9: delete_on_success and resume_from ------------------------------------------------


async def test_delete_on_success_keeps_the_snapshot_while_running_then_deletes_it(
    checkpointer: Checkpointer,
) -> None:
    """C9: the durable record of such a run is the session."""
    seen: list[Any] = []

    @tool
    async def peek(ctx: RunContext[Any]) -> str:
        """Look at the checkpoint."""
        seen.append(await checkpointer.load(ctx.run_id))
        return "peeked"

    session = InMemorySession()
    model = ScriptedProvider([call("peek", {}), text("done")])
    agent = Agent(name="a", model=model, tools=[peek])
    opts = CheckpointOptions(checkpointer, "r1", delete_on_success=True)
    result = await Runner.run(agent, "go", session=session, session_id="s", checkpoint=opts)
    assert seen[0] is not None and seen[0].status == "running"
    assert await checkpointer.load("r1") is None
    assert (await session.segments("s"))[0].entries == result.entries


async def test_delete_on_success_keeps_an_interrupted_run(checkpointer: Checkpointer) -> None:
    """C9: only success deletes; an interrupted run stays resumable."""
    job = Job()
    agent, _ = job.agent(
        [call("stop", {})],
    )
    opts = CheckpointOptions(checkpointer, "r1", delete_on_success=True)
    with pytest.raises(Exception, match="stopped inside"):
        await Runner.run(agent, "go", checkpoint=opts)
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.status == "interrupted"
    agent2, _ = job.agent([text("done")])
    assert (await Runner.run(agent2, "go", checkpoint=opts)).output == "done"
    assert await checkpointer.load("r1") is None


async def test_after_delete_the_same_run_id_starts_fresh(checkpointer: Checkpointer) -> None:
    """C9: cp.delete(run_id) forgets the run; the id then starts a new one."""
    job, _ = await completed_run(checkpointer, "r1")
    await checkpointer.delete("r1")
    agent, model = job.agent([text("brand new")])
    result = await Runner.run(agent, "again", checkpoint=CheckpointOptions(checkpointer, "r1"))
    assert result.output == "brand new" and len(model.calls) == 1


async def test_resume_from_a_snapshot_the_caller_holds(checkpointer: Checkpointer) -> None:
    """C9: resume_from continues a RunSnapshot, here moved from another checkpointer."""
    job = Job()
    origin = InMemoryCheckpointer()
    await interrupt(job, origin, "r1")
    held = await origin.load("r1")
    assert held is not None
    agent, _ = job.agent(list(RESUME_SCRIPT))
    result = await Runner.run(
        agent, [], checkpoint=CheckpointOptions(checkpointer, resume_from=held)
    )
    assert result.output == "all done" and result.run_id == "r1"
    assert job.names() == ["step", "stop", "stop"]
    stored = await checkpointer.load("r1")
    assert stored is not None and stored.status == "completed"
    assert stored.entries == result.entries


async def test_resume_from_a_completed_snapshot_replays_it(checkpointer: Checkpointer) -> None:
    """C9 + C8: a completed snapshot in hand is replayed without the model."""
    job, first = await completed_run(checkpointer, "r1")
    held = await checkpointer.load("r1")
    agent, model = job.agent([])
    opts = CheckpointOptions(InMemoryCheckpointer(), resume_from=held)
    result = await Runner.run(agent, [], checkpoint=opts)
    assert result.output == first.output and model.calls == []


def test_resume_from_with_another_run_id_is_a_user_error() -> None:
    snap = RunSnapshot("a", "worker", [], Usage(), 0, "running", None, None, {}, 0.0)
    with pytest.raises(UserError):
        CheckpointOptions(InMemoryCheckpointer(), "b", resume_from=snap)


# -- sharp edges --------------------------------------------------------------------------


async def test_e1_reusing_a_completed_run_id_replays_and_ignores_new_input(
    checkpointer: Checkpointer,
) -> None:
    """E1: the next turn of a conversation is a session's job, not a checkpoint's."""
    job, first = await completed_run(checkpointer, "r1")
    agent, model = job.agent([text("an answer to the new question")])
    result = await Runner.run(
        agent, "a new question", checkpoint=CheckpointOptions(checkpointer, "r1")
    )
    assert result.output == first.output == "the answer"
    assert model.calls == []
    assert all("new question" not in str(getattr(e, "content", "")) for e in result.entries)


async def test_e2_dangling_calls_run_again_and_can_deduplicate_on_run_id(
    checkpointer: Checkpointer,
) -> None:
    """E2: a resumed call runs again; a tool that keys on ctx.run_id + arguments charges once."""
    charged: dict[tuple[str, str], str] = {}
    executions: list[str] = []
    crash = [True]

    @tool
    def charge(ctx: RunContext[Any], customer: str, cents: int) -> str:
        """Charge a customer."""
        executions.append(customer)
        key = (ctx.run_id, f"{customer}:{cents}")
        receipt = charged.setdefault(key, f"receipt-{len(charged) + 1}")
        if crash[0]:
            crash[0] = False
            raise RunCancelled("the worker died after charging")
        return receipt

    script = [call("charge", {"customer": "ada", "cents": 500}), text("charged")]
    agent = Agent(name="billing", model=ScriptedProvider(script[:1]), tools=[charge])
    with pytest.raises(Exception, match="died"):
        await Runner.run(agent, "bill ada", checkpoint=CheckpointOptions(checkpointer, "job-1"))
    agent = agent.clone(model=ScriptedProvider(script[1:]))
    result = await Runner.run(
        agent, "bill ada", checkpoint=CheckpointOptions(checkpointer, "job-1")
    )
    assert executions == ["ada", "ada"]  # at least once: the dangling call ran again
    assert charged == {("job-1", "ada:500"): "receipt-1"}  # ...but charged once
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outputs == ["receipt-1"]


async def test_e3_a_run_id_shared_by_two_sessions_is_one_run(checkpointer: Checkpointer) -> None:
    """E3: nothing is corrupted, but the second session gets the first run's answer."""
    first_session, second_session = InMemorySession(), InMemorySession()
    job, first = await completed_run(
        checkpointer, "shared", session=first_session, session_id="alice"
    )
    agent, model = job.agent([text("bob's own answer")])
    result = await Runner.run(
        agent,
        "bob asks",
        session=second_session,
        session_id="bob",
        checkpoint=CheckpointOptions(checkpointer, "shared"),
    )
    assert result.output == first.output and model.calls == []
    assert [s.run_id for s in await first_session.segments("alice")] == ["shared"]
    assert (await first_session.load("alice")) == first.entries


async def test_e4_an_in_memory_checkpointer_gives_no_crash_recovery() -> None:
    """E4: a new process (a new InMemoryCheckpointer) knows nothing of the old run."""
    job = Job()
    await interrupt(job, InMemoryCheckpointer(), "r1")
    agent, model = job.agent([text("started over")])
    result = await Runner.run(
        agent, "go", checkpoint=CheckpointOptions(InMemoryCheckpointer(), "r1")
    )
    assert result.output == "started over"
    assert result.turns == 1 and len(model.calls) == 1
