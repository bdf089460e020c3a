"""Running and streaming: event order, the single terminal event, limits and cancellation."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel

from lovia import (
    Agent,
    CancelToken,
    MaxTurnsExceeded,
    OutputValidationError,
    RunCancelled,
    RunContext,
    Runner,
    RunResult,
    ToolCallEntry,
    ToolResultEntry,
    Usage,
    UserError,
    tool,
)
from lovia.events import RunCompleted, RunFailed, RunStarted, TextDelta
from lovia.messages import Message
from lovia.testing import ScriptedProvider, batch, call, text

from .helpers import agent_with, types


@tool
def echo(text: str) -> str:
    """Repeat the text."""
    return text


async def test_event_order_of_a_run_with_one_tool_call() -> None:
    agent, _ = agent_with([call("echo", {"text": "hi"}), text("done")], tools=[echo])
    handle = Runner.stream(agent, "go")
    events = [e async for e in handle]
    assert types(events) == [
        "run_started",
        "turn_started",
        "message_completed",
        "tool_call_started",
        "tool_call_completed",
        "turn_ended",
        "turn_started",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_delta",
        "message_completed",
        "turn_ended",
        "run_completed",
    ]
    assert isinstance(events[0], RunStarted) and events[0].agent_name == "assistant"
    assert isinstance(events[-1], RunCompleted)
    assert events[-1].result.output == "done"
    assert (await handle.result()).output == "done"


async def test_text_deltas_carry_the_text() -> None:
    agent, _ = agent_with([text("hello", reasoning="think")])
    events = [e async for e in Runner.stream(agent, "x")]
    # the scripted model streams one character per delta, as 0.9.119's
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["h", "e", "l", "l", "o"]
    assert "reasoning_delta" in types(events)


async def test_a_failing_run_streams_one_terminal_run_failed_and_result_raises() -> None:
    agent, _ = agent_with([])  # the script is empty: the model call fails
    handle = Runner.stream(agent, "x")
    events = [e async for e in handle]  # iterating never raises
    assert types(events)[-1] == "run_failed"
    assert sum(1 for e in events if e.terminal) == 1
    with pytest.raises(AssertionError, match="ran out of canned responses"):
        await handle.result()


@pytest.mark.parametrize("problem", ["no_model", "duplicate_tools", "resume_only"])
async def test_errors_before_the_first_turn_still_end_in_run_failed(problem: str) -> None:
    from lovia import CheckpointOptions, InMemoryCheckpointer

    kwargs: dict[str, Any] = {}
    if problem == "no_model":
        agent = Agent("a")
    elif problem == "duplicate_tools":
        other = tool(name="echo")(lambda text: text)
        agent = Agent("a", model=ScriptedProvider([]), tools=[echo, other])
    else:
        agent = Agent("a", model=ScriptedProvider([]))
        kwargs["checkpoint"] = CheckpointOptions(
            InMemoryCheckpointer(), "missing", if_run_exists="resume_only"
        )
    handle = Runner.stream(agent, "x", **kwargs)
    events = [e async for e in handle]
    assert len(events) == 1 and isinstance(events[0], RunFailed)
    assert isinstance(events[0].error, UserError)
    with pytest.raises(UserError) as info:
        await handle.result()
    assert info.value.hint


async def test_usage_is_summed_over_turns_and_finish_reason_is_the_last() -> None:
    agent, _ = agent_with([call("echo", {"text": "a"}), text("b")], tools=[echo])
    result = await Runner.run(agent, "x")
    assert result.turns == 2
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.usage.total_tokens == result.usage.input_tokens + result.usage.output_tokens
    assert result.usage == Usage(2, 2)  # each scripted turn reports 1 + 1 tokens
    assert result.finish_reason is None  # the scripted model reports no finish reason
    assert Usage(1, 2) + Usage(3, 4) == Usage(4, 6)
    assert sum([Usage(1, 2), Usage(3, 4)]) == Usage(4, 6)


async def test_a_result_is_a_whole_frozen_run_result() -> None:
    agent, _ = agent_with([call("echo", {"text": "a"}), text("b")], tools=[echo])
    result = await Runner.run(agent, "x", session_id=None)
    assert isinstance(result, RunResult)
    names = [f.name for f in dataclasses.fields(RunResult)]
    assert sorted(vars(result)) == sorted(names)  # every field set on the object itself
    assert dataclasses.replace(result) == result
    assert (result.output, result.turns, result.replayed) == ("b", 2, False)
    assert result.session_id is None and result.last_input_tokens == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.turns = 3  # type: ignore[misc]


async def test_result_entries_hold_the_input_and_no_system_prompt() -> None:
    agent, model = agent_with([text("ok")], instructions="You are terse.")
    result = await Runner.run(agent, "hello")
    assert [e.type for e in result.entries] == ["input", "assistant_text"]
    assert model.calls[0][0] == Message(role="system", content="You are terse.")
    assert [m.role for m in model.calls[0]].count("system") == 1


async def test_input_may_be_messages_or_entries() -> None:
    agent, model = agent_with([text("ok")])
    await Runner.run(
        agent,
        [{"role": "user", "content": "first"}, {"role": "assistant", "content": "noted"}],
    )
    assert [m.role for m in model.calls[0]] == ["user", "assistant"]  # no instructions
    with pytest.raises(UserError, match="cannot use int"):
        await Runner.run(agent, [42])


async def test_max_turns_stops_a_run_that_keeps_calling_tools() -> None:
    agent, _ = agent_with([call("echo", {"text": "x"})] * 3, tools=[echo])
    with pytest.raises(MaxTurnsExceeded) as info:
        await Runner.run(agent, "loop", max_turns=2)
    assert info.value.hint


async def test_cancel_from_a_tool_keeps_its_result_and_stops_before_the_next_call() -> None:
    @tool
    def stop_now(ctx: RunContext[None]) -> str:
        ctx.cancel_token.cancel("user pressed stop")
        return "stopping"

    agent, model = agent_with([call("stop_now"), text("never")], tools=[stop_now])
    handle = Runner.stream(agent, "x")
    events = [e async for e in handle]
    assert types(events)[-1] == "run_failed"
    with pytest.raises(RunCancelled, match="user pressed stop"):
        await handle.result()
    assert len(model.calls) == 1  # no further model call


async def test_a_token_cancelled_by_a_model_call_that_never_waits_stops_the_run() -> None:
    token = CancelToken()

    def answer(messages: list[Message]) -> str:
        token.cancel("stopped while answering")
        return "an answer no one keeps"

    agent, model = agent_with([answer, text("never")])
    with pytest.raises(RunCancelled, match="stopped while answering"):
        await Runner.run(agent, "x", cancel_token=token)
    assert len(model.calls) == 1


async def test_an_async_tool_that_cancels_without_waiting_keeps_its_result() -> None:
    from lovia import CheckpointOptions, InMemoryCheckpointer

    @tool
    async def stop_here(ctx: RunContext[None]) -> str:
        ctx.cancel_token.cancel("stop after this")
        return "kept"

    cp = InMemoryCheckpointer()
    agent, model = agent_with([call("stop_here"), text("never")], tools=[stop_here])
    with pytest.raises(RunCancelled, match="stop after this"):
        await Runner.run(agent, "x", checkpoint=CheckpointOptions(cp, "r"))
    snap = await cp.load("r")
    assert snap is not None and snap.status == "interrupted"
    last = snap.entries[-1]
    assert isinstance(last, ToolResultEntry) and last.output == "kept"
    assert len(model.calls) == 1


async def test_a_tool_raising_run_cancelled_leaves_its_call_without_result() -> None:
    from lovia import CheckpointOptions, InMemoryCheckpointer

    @tool
    def abort() -> str:
        raise RunCancelled("abort")

    cp = InMemoryCheckpointer()
    agent, _ = agent_with([call("abort"), text("never")], tools=[abort])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "x", checkpoint=CheckpointOptions(cp, "r"))
    snap = await cp.load("r")
    assert snap is not None and snap.status == "interrupted"
    assert isinstance(snap.entries[-1], ToolCallEntry)


async def test_cancel_from_outside_stops_a_running_tool() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        started.set()
        await asyncio.sleep(10)
        return "never"

    token = CancelToken()
    agent, _ = agent_with([call("slow"), text("never")], tools=[slow])
    task = asyncio.ensure_future(Runner.run(agent, "x", cancel_token=token))
    await started.wait()
    token.cancel()
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(task, 2)


class _SlowStream:
    """A provider that streams one word every 10 ms and records whether it was closed."""

    name = "slow"
    model = "slow"
    supports_json_schema = False

    def __init__(self) -> None:
        self.closed = False

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        from lovia.transcript import TextDelta as ModelText

        try:
            for _ in range(1000):
                yield ModelText("word ")
                await asyncio.sleep(0.01)
        finally:
            self.closed = True


async def test_cancel_while_the_model_streams_closes_the_stream() -> None:
    model = _SlowStream()
    handle = Runner.stream(Agent("a", model=model), "x")
    seen: list[str] = []
    async for event in handle:
        seen.append(event.type)
        if event.type == "text_delta" and seen.count("text_delta") == 3:
            handle.cancel("stop")
    assert seen[-1] == "run_failed" and seen.count("text_delta") < 10
    with pytest.raises(RunCancelled):
        await handle.result()
    assert model.closed


async def test_cancel_before_the_run_starts() -> None:
    agent, model = agent_with([text("never")])
    handle = Runner.stream(agent, "x")
    handle.cancel("before anything")
    events = [e async for e in handle]
    assert types(events)[-1] == "run_failed"
    with pytest.raises(RunCancelled):
        await handle.result()
    assert model.calls == []


async def test_cancelling_the_awaiting_task_raises_cancelled_error() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        started.set()
        await asyncio.sleep(10)
        return "never"

    agent, _ = agent_with([call("slow"), text("never")], tools=[slow])
    task = asyncio.ensure_future(Runner.run(agent, "x"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_dynamic_instructions_sync_and_async_are_rendered_per_run() -> None:
    calls: list[int] = []

    def sync_instructions(ctx: RunContext[int]) -> str:
        calls.append(ctx.deps)
        return f"user #{ctx.deps}"

    async def async_instructions(ctx: RunContext[int]) -> str:
        await asyncio.sleep(0)
        return f"async user #{ctx.deps}"

    agent, model = agent_with([text("a"), text("b")], instructions=sync_instructions)
    await Runner.run(agent, "x", deps=1)
    await Runner.run(agent, "x", deps=2)
    assert [c[0].content for c in model.calls] == ["user #1", "user #2"]
    assert calls == [1, 2]
    agent2, model2 = agent_with([text("c")], instructions=async_instructions)
    await Runner.run(agent2, "x", deps=7)
    assert model2.calls[0][0].content == "async user #7"


def test_run_sync_from_plain_code() -> None:
    agent, _ = agent_with([text("sync ok")])
    assert Runner.run_sync(agent, "x").output == "sync ok"
    agent2, _ = agent_with([text("shorthand")])
    assert agent2.run_sync("x").output == "shorthand"


async def test_run_sync_inside_a_loop_is_a_clear_error() -> None:
    agent, _ = agent_with([text("x")])
    with pytest.raises(UserError, match="running event loop"):
        Runner.run_sync(agent, "x")


async def test_structured_output_is_validated() -> None:
    class Answer(BaseModel):
        city: str
        celsius: int

    agent, _ = agent_with([text('{"city": "Oslo", "celsius": 3}')], output_type=Answer)
    result = await Runner.run(agent, "x")
    assert result.output == Answer(city="Oslo", celsius=3)
    agent2, model2 = agent_with([text("not json"), text("still not json")], output_type=Answer)
    with pytest.raises(OutputValidationError) as caught:  # one repair, then it fails
        await Runner.run(agent2, "x")
    assert caught.value.raw == "still not json" and len(model2.calls) == 2


async def test_agent_is_frozen_and_clone_replaces_fields() -> None:
    agent, _ = agent_with([], instructions="a", tools=[echo])
    with pytest.raises(AttributeError):
        agent.name = "other"  # type: ignore[misc]
    twin = agent.clone(name="twin")
    assert twin.name == "twin" and twin.tools == agent.tools and agent.name == "assistant"
    assert Agent("m", model="openai:gpt-4.1").model == "openai:gpt-4.1"
    assert Agent("r", retry=None).retry is None


async def test_parallel_calls_of_one_turn_in_the_transcript() -> None:
    agent, _ = agent_with(
        [batch(("echo", {"text": "1"}), ("echo", {"text": "2"})), text("ok")], tools=[echo]
    )
    result = await Runner.run(agent, "x")
    calls = [e.call_id for e in result.entries if isinstance(e, ToolCallEntry)]
    res = [e.call_id for e in result.entries if isinstance(e, ToolResultEntry)]
    assert calls == ["call_0_echo", "call_1_echo"] and sorted(res) == sorted(calls)


async def test_render_system_prompt_joins_instructions_fragments_and_extra() -> None:
    from lovia import RunContext

    agent = Agent("a", instructions=lambda ctx: f"BASE for {ctx.deps}")

    @agent.instruction
    async def tier(ctx: RunContext[str]) -> str:
        return "tier=gold"

    @agent.instruction
    def nothing(ctx: RunContext[str]) -> str:
        return ""

    twin = agent.with_instructions(lambda ctx: "TWIN")
    ctx: RunContext[str] = RunContext(deps="ada", agent=agent)
    assert await agent.render_system_prompt(ctx) == "BASE for ada\n\ntier=gold"
    assert await agent.render_system_prompt(ctx, extra="EXTRA") == (
        "BASE for ada\n\ntier=gold\n\nEXTRA"
    )
    assert await twin.render_system_prompt(ctx) == "BASE for ada\n\ntier=gold\n\nTWIN"
    # a run's system message starts with the same text
    model = ScriptedProvider([text("ok")])
    await Runner.run(agent.clone(model=model), "hi", deps="ada", extra_instructions="Be brief.")
    assert model.calls[0][0].content == "BASE for ada\n\ntier=gold\n\nBe brief."


async def test_resolve_provider_and_a_list_of_models_is_refused() -> None:
    model = ScriptedProvider([text("x")])
    assert Agent("a", model=model).resolve_provider() is model
    listed = Agent("a", model=[model])
    with pytest.raises(UserError, match="one model, not a list") as caught:
        listed.resolve_provider()
    assert "gateway" in (caught.value.hint or "")
    with pytest.raises(UserError, match="one model, not a list"):
        await Runner.run(listed, "hi")


async def test_leaving_at_the_terminal_event_of_a_failed_run_logs_no_stray_task_error() -> None:
    """A consumer that stops at ``RunFailed`` and then awaits ``result()`` gets the error
    there; asyncio does not also report the run's task as 'never retrieved'."""
    import gc

    seen: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    try:
        handle = Runner.stream(Agent("a"), "x")  # no model: fails before the first turn
        async for event in handle:
            if event.terminal:
                break
        with pytest.raises(UserError):
            await handle.result()
        del handle, event
        for _ in range(3):  # the left generator is closed by the loop, then both are freed
            gc.collect()
            for _ in range(3):
                await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert [c.get("message") for c in seen] == []
