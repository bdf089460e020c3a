"""Failure modes seen in other agent frameworks, each shown not to happen here (issue 9).

A dangling call poisoning the next prompt after a cancel; an orphaned result after a failed
session write; duplicated entries after resume or retry; user input lost when a run is
retried or cancelled mid-save (S2, S5, S6, C2, C7, C8, C10, C12)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    GuardrailTripped,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    ProviderError,
    RunCancelled,
    RunContext,
    Runner,
    StoreError,
    drop_dangling_tool_calls,
    tool,
)
from lovia.testing import ScriptedProvider, batch, call, text
from tests.faults import FaultySession, dropped_connection, fail_appends

from .stores import (
    PausingCheckpointer,
    assert_prompts_well_formed,
    assert_well_formed,
)


class Tools:
    """``quick`` returns and cancels the run; ``slow`` never finishes; both count runs."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.cancel = True

    def all(self) -> list[Any]:
        @tool
        async def quick(ctx: RunContext[Any]) -> str:
            """Answer quickly."""
            self.ran.append("quick")
            if self.cancel:
                self.cancel = False
                ctx.cancel_token.cancel("the user pressed stop")
            return "quick result"

        @tool
        async def slow() -> str:
            """Take a long time."""
            self.ran.append("slow")
            if self.ran.count("slow") == 1:
                await asyncio.Event().wait()  # cancelled with the run
            return "slow result"

        return [quick, slow]


FIRST = batch(("quick", {}, "q1"), ("slow", {}, "s1"))


async def _cancelled(tools: Tools, **kwargs: Any) -> None:
    agent = Agent("a", model=ScriptedProvider([FIRST]), tools=tools.all())
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "go", **kwargs)


async def test_resuming_a_cancelled_run_never_sends_a_call_without_its_result() -> None:
    """The cancelled slow call runs again before the model is asked; every prompt is whole."""
    cp, session, tools = InMemoryCheckpointer(), InMemorySession(), Tools()
    opts = CheckpointOptions(cp, "r1")
    await _cancelled(tools, session=session, session_id="u1", checkpoint=opts)
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "interrupted"
    model = ScriptedProvider([text("both done")])
    agent = Agent("a", model=model, tools=tools.all())
    result = await Runner.run(agent, "go", session=session, session_id="u1", checkpoint=opts)
    assert result.output == "both done"
    assert tools.ran == ["quick", "slow", "slow"]
    assert_prompts_well_formed(model.calls)
    assert [m.tool_call_id for m in model.calls[0] if m.role == "tool"] == ["q1", "s1"]
    assert_well_formed(await session.load("u1"))


async def test_the_next_run_after_a_cancel_does_not_see_the_dangling_call() -> None:
    """S6: an interrupted run stays out of the session, so the next run's prompt is whole."""
    session, tools = InMemorySession(), Tools()
    await _cancelled(tools, session=session, session_id="u1")
    assert await session.load("u1") == []
    model = ScriptedProvider([text("fresh")])
    await Runner.run(Agent("a", model=model), "again", session=session, session_id="u1")
    assert_prompts_well_formed(model.calls)
    assert [m.role for m in model.calls[0]] == ["user"]  # no instructions: no system message


async def test_a_partial_run_saved_with_drop_dangling_tool_calls_keeps_prompts_whole() -> None:
    """S6: the caller's choice to keep a partial run, made safe by the documented helper."""
    session, tools, cp = InMemorySession(), Tools(), InMemoryCheckpointer()
    await _cancelled(tools, checkpoint=CheckpointOptions(cp, "r1"))
    snap = await cp.load("r1")
    assert snap is not None
    await session.append("u1", drop_dangling_tool_calls(snap.entries), run_id="r1")
    model = ScriptedProvider([text("ok")])
    await Runner.run(Agent("a", model=model), "next", session=session, session_id="u1")
    assert_prompts_well_formed(model.calls)
    assert_well_formed(await session.load("u1"))


async def test_a_failed_session_write_during_resume_leaves_no_orphaned_result() -> None:
    """C12: the checkpoint completes first; re-submitting repairs the session with one whole
    segment, without running tools or the model again."""
    cp, store, tools = InMemoryCheckpointer(), InMemorySession(), Tools()
    opts = CheckpointOptions(cp, "r1")
    await _cancelled(tools, checkpoint=opts)
    flaky = FaultySession(store, before=fail_appends(1, dropped_connection), versioned=False)
    model = ScriptedProvider([text("done")])
    agent = Agent("a", model=model, tools=tools.all())
    with pytest.raises(StoreError, match="went away"):
        await Runner.run(agent, "go", session=flaky, session_id="u1", checkpoint=opts)
    assert await store.load("u1") == []
    again = await Runner.run(agent, "go", session=flaky, session_id="u1", checkpoint=opts)
    assert again.output == "done"
    assert len(model.calls) == 1
    assert tools.ran == ["quick", "slow", "slow"]
    segments = await store.segments("u1")
    assert [s.run_id for s in segments] == ["r1"]
    assert_well_formed(segments[0].entries)
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "completed"
    assert segments[0].entries == snap.entries


async def test_re_submitting_a_finished_run_never_duplicates_entries() -> None:
    """S5, C8: three re-submissions, one segment, the checkpoint unchanged."""
    cp, session = InMemoryCheckpointer(), InMemorySession()
    opts = CheckpointOptions(cp, "r1")
    model = ScriptedProvider([call("echo", {"x": "a"}), text("done")])

    @tool
    def echo(x: str) -> str:
        """Echo."""
        return x

    agent = Agent("a", model=model, tools=[echo])
    first = await Runner.run(agent, "go", session=session, session_id="u1", checkpoint=opts)
    stored = await cp.load("r1")
    for _ in range(3):
        again = await Runner.run(agent, "go", session=session, session_id="u1", checkpoint=opts)
        assert again.entries == first.entries
    assert [s.run_id for s in await session.segments("u1")] == ["r1"]
    assert await session.load("u1") == first.entries
    assert await cp.load("r1") == stored


async def test_retrying_after_a_model_error_keeps_the_input_once() -> None:
    """C7: the failed run resumes; the prompt holds the original input exactly once."""
    cp, session = InMemoryCheckpointer(), InMemorySession()
    opts = CheckpointOptions(cp, "r1")
    broken = Agent("a", model=ScriptedProvider([ProviderError("503 from the model")]), retry=None)
    with pytest.raises(ProviderError):
        await Runner.run(broken, "my question", session=session, session_id="u1", checkpoint=opts)
    model = ScriptedProvider([text("answer")])
    result = await Runner.run(
        Agent("a", model=model), "my question", session=session, session_id="u1", checkpoint=opts
    )
    assert result.output == "answer"
    users = [m.content for m in model.calls[0] if m.role == "user"]
    assert users == ["my question"]
    assert result.entries.count(InputEntry(role="user", content="my question")) == 1
    assert len(await session.segments("u1")) == 1


async def test_retrying_a_run_whose_input_guardrail_tripped_is_guarded_again() -> None:
    """A run an input guardrail refused keeps its input in the failed head (as 0.9.119's
    does): re-submitting the run id resumes that input (C7: the new input is ignored), so the
    guardrail judges it again and the model never sees it; a new question is a new run."""
    cp = InMemoryCheckpointer()
    opts = CheckpointOptions(cp, "r1")
    strict = [lambda messages, ctx: "too rude" if "stupid" in str(messages) else None]
    agent = Agent("a", model=ScriptedProvider([]), input_guardrails=strict)
    with pytest.raises(GuardrailTripped):
        await Runner.run(agent, "stupid question", checkpoint=opts)
    failed = await cp.load("r1")
    assert failed is not None and failed.status == "failed"
    assert [e.content for e in failed.entries] == ["stupid question"]  # type: ignore[union-attr]
    model = ScriptedProvider([text("happy to help")])
    agent = Agent("a", model=model, input_guardrails=strict)
    with pytest.raises(GuardrailTripped):
        await Runner.run(agent, "polite question", checkpoint=opts)
    assert model.calls == []
    result = await Runner.run(agent, "polite question", checkpoint=CheckpointOptions(cp, "r2"))
    assert result.output == "happy to help"
    assert [m.content for m in model.calls[0] if m.role == "user"] == ["polite question"]


@pytest.mark.parametrize(
    ("pause_at", "answer", "model_calls"),
    [(1, "second answer", 1), (2, "first answer", 0)],
    ids=["input-save", "model-turn-save"],
)
async def test_cancelling_a_run_mid_save_loses_no_user_input(
    pause_at: int, answer: str, model_calls: int
) -> None:
    """Cancel the task while a save is in flight (the write still lands): the run is marked
    interrupted with what it had (the input; or the input and the finished model turn), and
    re-submitting keeps the input exactly once. A final answer nothing checks is saved with
    the run's completion in one write, so when that is the write in flight the run may also
    land completed: the answer was kept, and re-submitting replays it."""
    inner = InMemoryCheckpointer()
    cp = PausingCheckpointer(inner, pause_at=pause_at)
    opts = CheckpointOptions(cp, "r1")
    first = ScriptedProvider([text("first answer")])
    task = asyncio.ensure_future(Runner.run(Agent("a", model=first), "keep me", checkpoint=opts))
    await cp.paused.wait()
    task.cancel()
    await asyncio.sleep(0)
    cp.gate.set()  # the slow write lands after its awaiter was cancelled
    with pytest.raises(asyncio.CancelledError):
        await task
    stopped = await inner.load("r1")
    landed = {"interrupted"} if pause_at == 1 else {"interrupted", "completed"}
    assert stopped is not None and stopped.status in landed
    model = ScriptedProvider([text("second answer")])
    result = await Runner.run(Agent("a", model=model), "keep me", checkpoint=opts)
    assert result.output == answer
    assert len(model.calls) == model_calls
    if model.calls:
        assert [m.content for m in model.calls[0] if m.role == "user"] == ["keep me"]
    snap = await inner.load("r1")
    assert snap is not None
    assert [e for e in snap.entries if isinstance(e, InputEntry)] == [
        InputEntry(role="user", content="keep me")
    ]
