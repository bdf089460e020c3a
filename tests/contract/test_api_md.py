"""Contract tests: every statement of api.md that the public API can check.

Each test is named after the statement it checks and cites the api.md section (and the
requirement id of the sessions/checkpoints spec where there is one).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import pathlib
from typing import Any

import pytest

import lovia
from lovia import (
    Agent,
    AgentHooks,
    AssistantTextEntry,
    CancelToken,
    CheckpointOptions,
    Compaction,
    FileResultStore,
    GuardrailTripped,
    Handoff,
    InMemoryCheckpointer,
    InMemoryResultStore,
    InMemorySession,
    InputEntry,
    LoviaError,
    ReasoningEntry,
    RunCancelled,
    RunContext,
    RunHead,
    Runner,
    RunSnapshot,
    Segment,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCallEntry,
    ToolResultEntry,
    Usage,
    UserError,
    drop_dangling_tool_calls,
    entry_from_dict,
    entry_to_dict,
    tool,
)
from lovia import events as ev
from lovia import transcript as tr
from lovia.context import NoopContextPolicy
from lovia.messages import Message
from lovia.testing import ScriptedProvider, batch, call, text

from .support import events_of, tool_results


@tool
def echo(value: str) -> str:
    """Echo the value back.

    Args:
        value: the text to echo.
    """
    return f"echo:{value}"


# --- Agent and Runner ---------------------------------------------------------------------


def test_agent_defaults_are_as_documented() -> None:
    """api.md Agent and Runner: Agent(name, instructions="", model=None, tools=[], ...)."""
    a = Agent("a")
    assert a.name == "a"
    assert a.instructions == ""
    assert a.model is None
    assert list(a.tools) == []
    assert list(a.handoffs) == []
    assert a.output_type is str
    assert a.max_tool_output_chars == 200_000
    assert list(a.input_guardrails) == [] and list(a.output_guardrails) == []
    assert a.hooks is None
    assert isinstance(a.context_policy, Compaction)


def test_agent_accepts_every_documented_keyword() -> None:
    """api.md Agent and Runner: the full keyword signature is accepted."""
    a = Agent(
        name="a",
        instructions="hi",
        model="openai:gpt-4.1",
        tools=[echo],
        handoffs=[],
        output_type=str,
        settings=lovia.ModelSettings(),
        context_policy=Compaction(),
        hooks=AgentHooks(),
        input_guardrails=[],
        output_guardrails=[],
        max_tool_output_chars=1000,
    )
    assert a.max_tool_output_chars == 1000


def test_agent_is_frozen() -> None:
    """api.md Agent and Runner: Agent is a frozen configuration."""
    a = Agent("a")
    with pytest.raises((AttributeError, TypeError, ValueError)):
        a.name = "b"  # type: ignore[misc]
    assert a.name == "a"


def test_agent_model_returns_what_was_passed() -> None:
    """api.md Behaviour details: `Agent.model` returns what was passed."""
    assert Agent("a", model="openai:gpt-4.1").model == "openai:gpt-4.1"
    assert Agent("a", model="anthropic:claude-sonnet-4-5").model == "anthropic:claude-sonnet-4-5"
    p = ScriptedProvider([])
    assert Agent("a", model=p).model is p


def test_agent_accepts_retry_none_and_retry_policy() -> None:
    """api.md Behaviour details: `Agent(retry=None)` is accepted (a RetryPolicy, or None)."""
    Agent("a", retry=None)
    Agent("a", retry=lovia.RetryPolicy())


def test_agent_clone_applies_overrides_and_keeps_original() -> None:
    """api.md Agent and Runner: agent.clone(**overrides)."""
    a = Agent("a", instructions="one")
    b = a.clone(instructions="two")
    assert (a.instructions, b.instructions, b.name) == ("one", "two", "a")


async def test_callable_instructions_rendered_at_every_run() -> None:
    """api.md Agent and Runner: dynamic instructions (sync or async) rendered every run."""
    seen: list[int] = []

    def sync_instr(ctx: RunContext[Any]) -> str:
        seen.append(1)
        return f"sys-{ctx.deps}"

    async def async_instr(ctx: RunContext[Any]) -> str:
        return f"async-{ctx.deps}"

    model = ScriptedProvider([text("1"), text("2"), text("3")])
    await Runner.run(Agent("a", instructions=sync_instr, model=model), "x", deps="A")
    await Runner.run(Agent("a", instructions=sync_instr, model=model), "x", deps="B")
    await Runner.run(Agent("a", instructions=async_instr, model=model), "x", deps="C")
    assert [c[0].content for c in model.calls] == ["sys-A", "sys-B", "async-C"]
    assert all(c[0].role == "system" for c in model.calls)
    assert len(seen) == 2


async def test_agent_run_and_stream_shorthands() -> None:
    """api.md Agent and Runner: agent.run / agent.stream are shorthands for Runner."""
    model = ScriptedProvider([text("r"), text("s")])
    a = Agent("a", model=model)
    assert (await a.run("x")).output == "r"
    h = a.stream("x")
    _ = [e async for e in h]
    assert (await h.result()).output == "s"


def test_run_sync_works_without_event_loop() -> None:
    """api.md Agent and Runner: Runner.run_sync / agent.run_sync for code with no loop."""
    model = ScriptedProvider([text("one"), text("two")])
    a = Agent("a", model=model)
    assert Runner.run_sync(a, "x").output == "one"
    assert a.run_sync("x").output == "two"


async def test_run_accepts_every_documented_keyword() -> None:
    """api.md Agent and Runner: Runner.run(agent, input, *, deps, max_turns, cancel_token, ...)."""
    model = ScriptedProvider([text("ok")])
    r = await Runner.run(
        Agent("a", model=model),
        "hi",
        deps=object(),
        max_turns=3,
        cancel_token=CancelToken(),
        context_policy=NoopContextPolicy(),
        session=InMemorySession(),
        session_id="s",
        checkpoint=CheckpointOptions(InMemoryCheckpointer(), "rid"),
    )
    assert r.output == "ok" and r.run_id == "rid" and r.session_id == "s"


async def test_input_may_be_a_list_of_entries() -> None:
    """api.md Agent and Runner: input is a string or a list of messages/entries."""
    model = ScriptedProvider([text("ok")])
    r = await Runner.run(Agent("a", model=model), [InputEntry(role="user", content="hello")])
    assert r.output == "ok"
    assert model.calls[0][-1] == Message(role="user", content="hello")


async def test_stream_ends_with_exactly_one_terminal_run_completed() -> None:
    """api.md Agent and Runner: every stream ends with exactly one terminal event."""
    model = ScriptedProvider([call("echo", {"value": "v"}), text("done")])
    events, handle = await events_of(Agent("a", model=model, tools=[echo]), "x")
    terminals = [e for e in events if isinstance(e, (ev.RunCompleted, ev.RunFailed))]
    assert terminals == [events[-1]] and isinstance(events[-1], ev.RunCompleted)
    result = await handle.result()
    assert events[-1].result.output == result.output == "done"
    assert isinstance(events[0], ev.RunStarted)


async def test_stream_of_a_failing_run_never_raises_and_ends_with_run_failed() -> None:
    """api.md Agent and Runner: iterating never raises; errors surface from result()."""
    model = ScriptedProvider([RuntimeError("boom")])
    events, handle = await events_of(Agent("a", model=model), "x")
    assert isinstance(events[-1], ev.RunFailed)
    assert sum(isinstance(e, (ev.RunCompleted, ev.RunFailed)) for e in events) == 1
    with pytest.raises((RuntimeError, LoviaError)):
        await handle.result()


async def test_stream_error_before_first_turn_no_model_yields_run_failed() -> None:
    """api.md Behaviour details: one-terminal-event rule holds for 'no model configured'."""
    events, handle = await events_of(Agent("a"), "x")
    assert isinstance(events[-1], ev.RunFailed)
    assert sum(isinstance(e, (ev.RunCompleted, ev.RunFailed)) for e in events) == 1
    with pytest.raises(LoviaError):
        await handle.result()


async def test_stream_error_before_first_turn_duplicate_tool_names_yields_run_failed() -> None:
    """api.md Behaviour details: one-terminal-event rule holds for two tools with one name."""

    @tool(name="echo")
    def other(value: str) -> str:
        return value

    agent = Agent("a", model=ScriptedProvider([text("x")]), tools=[echo, other])
    events, handle = await events_of(agent, "x")
    assert isinstance(events[-1], ev.RunFailed)
    assert sum(isinstance(e, (ev.RunCompleted, ev.RunFailed)) for e in events) == 1
    with pytest.raises(LoviaError):
        await handle.result()


async def test_stream_error_before_first_turn_resume_only_without_snapshot_yields_run_failed() -> (
    None
):
    """api.md Behaviour details: one-terminal-event rule holds for resume_only, no snapshot."""
    cp = InMemoryCheckpointer()
    opts = CheckpointOptions(cp, "nope", if_run_exists="resume_only")
    events, handle = await events_of(Agent("a", model=ScriptedProvider([])), [], checkpoint=opts)
    assert isinstance(events[-1], ev.RunFailed)
    assert sum(isinstance(e, (ev.RunCompleted, ev.RunFailed)) for e in events) == 1
    with pytest.raises(UserError):
        await handle.result()


async def test_run_result_has_documented_fields() -> None:
    """api.md Agent and Runner: RunResult fields output, entries, usage, turns, ..."""
    model = ScriptedProvider([call("echo", {"value": "v"}), text("done")])
    a = Agent("a", model=model, tools=[echo])
    r = await Runner.run(a, "hi", session=InMemorySession(), session_id="s1")
    assert r.output == "done"
    assert isinstance(r.usage, Usage) and r.usage.input_tokens > 0
    assert r.turns == 2
    assert r.finish_reason is None  # the scripted model reports none, as 0.9.119's
    assert r.final_agent is a or r.final_agent.name == "a"
    assert isinstance(r.run_id, str) and r.run_id
    assert r.session_id == "s1"
    assert [e.type for e in r.entries] == ["input", "tool_call", "tool_result", "assistant_text"]


def test_usage_defaults_addable_comparable_total_tokens() -> None:
    """api.md: Usage(input_tokens=0, ...) comparable and addable; has total_tokens."""
    u = Usage()
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        0,
        0,
        0,
        0,
    )
    a = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4)
    b = Usage(input_tokens=10, output_tokens=20)
    s = a + b
    assert s == Usage(input_tokens=11, output_tokens=22, cache_read_tokens=3, cache_write_tokens=4)
    assert s != a
    assert b.total_tokens == 30
    assert Usage().total_tokens == 0


# --- Cancelling -------------------------------------------------------------------------------


async def test_tool_that_cancels_token_keeps_its_result_and_run_stops_interrupted() -> None:
    """api.md Behaviour details: a tool calling ctx.cancel_token.cancel() keeps its result."""

    @tool
    def stopper(ctx: RunContext[Any]) -> str:
        """Stop the run."""
        ctx.cancel_token.cancel()
        return "stopped-here"

    cp = InMemoryCheckpointer()
    model = ScriptedProvider([call("stopper", {}), text("never")])
    agent = Agent("a", model=model, tools=[stopper])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "x", checkpoint=CheckpointOptions(cp, "r1"))
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "interrupted"
    results = tool_results(snap.entries)
    assert [r.output for r in results] == ["stopped-here"]
    assert len(model.calls) == 1


async def test_tool_raising_run_cancelled_leaves_its_call_without_result() -> None:
    """api.md Behaviour details: a tool that raises RunCancelled ends the run the same way."""

    @tool
    def quitter() -> str:
        """Quit."""
        raise RunCancelled("quit")

    cp = InMemoryCheckpointer()
    agent = Agent("a", model=ScriptedProvider([call("quitter", {}), text("x")]), tools=[quitter])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "x", checkpoint=CheckpointOptions(cp, "r1"))
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "interrupted"
    assert [e.type for e in snap.entries] == ["input", "tool_call"]


async def test_cancel_token_cancel_accepts_reason_and_stops_at_safe_point() -> None:
    """api.md Behaviour details: CancelToken.cancel(reason=None); head 'interrupted'."""
    token = CancelToken()

    @tool
    def stopper() -> str:
        """Stop."""
        token.cancel(reason="user pressed stop")
        return "ok"

    cp = InMemoryCheckpointer()
    agent = Agent("a", model=ScriptedProvider([call("stopper", {}), text("x")]), tools=[stopper])
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "x", cancel_token=token, checkpoint=CheckpointOptions(cp, "r"))
    snap = await cp.load("r")
    assert snap is not None and snap.status == "interrupted"


async def test_run_handle_cancel_with_reason_stops_the_stream() -> None:
    """api.md Behaviour details: RunHandle.cancel(reason=None)."""
    model = ScriptedProvider(
        [call("echo", {"value": "a"}), call("echo", {"value": "b"}), text("z")]
    )
    cp = InMemoryCheckpointer()
    handle = Runner.stream(
        Agent("a", model=model, tools=[echo]), "x", checkpoint=CheckpointOptions(cp, "r")
    )
    events = []
    async for e in handle:
        events.append(e)
        if isinstance(e, ev.ToolCallCompleted):
            handle.cancel(reason="enough")
    assert isinstance(events[-1], ev.RunFailed)
    with pytest.raises(RunCancelled):
        await handle.result()
    snap = await cp.load("r")
    assert snap is not None and snap.status == "interrupted"
    assert len(model.calls) == 1


async def test_cancelling_the_awaiting_task_raises_cancelled_error() -> None:
    """api.md Behaviour details: cancelling the task awaiting Runner.run -> CancelledError."""
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Wait forever."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    cp = InMemoryCheckpointer()
    agent = Agent("a", model=ScriptedProvider([call("slow", {}), text("x")]), tools=[slow])
    task = asyncio.create_task(Runner.run(agent, "x", checkpoint=CheckpointOptions(cp, "r")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = await cp.load("r")
    assert snap is not None and snap.status in ("running", "interrupted")


# --- guardrails, tools, handoffs, hooks ---------------------------------------------------


async def test_tripped_output_guardrail_fails_run_with_head_failed() -> None:
    """api.md Behaviour details: a tripped output guardrail fails the run, head 'failed'."""

    def no_secrets(output: Any, ctx: RunContext[Any]) -> str | None:
        return "secret found" if "secret" in str(output) else None

    cp = InMemoryCheckpointer()
    agent = Agent("a", model=ScriptedProvider([text("the secret")]), output_guardrails=[no_secrets])
    with pytest.raises(GuardrailTripped):
        await Runner.run(agent, "x", checkpoint=CheckpointOptions(cp, "r"))
    snap = await cp.load("r")
    assert snap is not None and snap.status == "failed"


async def test_guardrail_raising_guardrail_tripped_or_async_trips() -> None:
    """api.md Guardrails: raising GuardrailTripped(reason) trips; sync or async."""

    async def block(messages: Any, ctx: RunContext[Any]) -> None:
        raise GuardrailTripped("blocked")

    model = ScriptedProvider([text("x")])
    with pytest.raises(GuardrailTripped):
        await Runner.run(Agent("a", model=model, input_guardrails=[block]), "hi")


async def test_passing_guardrails_let_the_run_complete() -> None:
    """api.md Guardrails: a guardrail returning None/empty does not trip."""

    def ok(value: Any, ctx: RunContext[Any]) -> str:
        return ""

    agent = Agent(
        "a", model=ScriptedProvider([text("fine")]), input_guardrails=[ok], output_guardrails=[ok]
    )
    assert (await Runner.run(agent, "hi")).output == "fine"


async def test_invalid_arguments_and_exceptions_become_error_results() -> None:
    """api.md Tools: invalid arguments and ordinary exceptions -> is_error result, not failure."""

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool
    def broken() -> str:
        """Always fails."""
        raise ValueError("kaputt")

    model = ScriptedProvider(
        [batch(("add", {"a": "not a number"}), ("broken", {})), text("recovered")]
    )
    r = await Runner.run(Agent("a", model=model, tools=[add, broken]), "x")
    assert r.output == "recovered"
    results = tool_results(r.entries)
    assert [x.is_error for x in results] == [True, True]
    assert "kaputt" in results[1].output


def test_tool_schema_from_signature_and_docstring() -> None:
    """api.md Tools: first paragraph = description, Args: section = parameter descriptions."""
    t = echo
    assert isinstance(t, lovia.Tool)
    dumped = json.dumps(
        dataclasses.asdict(t) if dataclasses.is_dataclass(t) else vars(t), default=str
    )
    assert "Echo the value back." in dumped
    assert "the text to echo." in dumped


async def test_tool_decorator_with_options_and_run_context_parameter() -> None:
    """api.md Tools: @tool(name=..., description=...); RunContext param gets live context."""
    seen: dict[str, Any] = {}

    @tool(
        name="whoami",
        description="Tell who runs",
        parallel=True,
        timeout=None,
        max_output_chars=None,
    )
    async def who(ctx: RunContext[Any]) -> str:
        seen["deps"] = ctx.deps
        seen["run_id"] = ctx.run_id
        seen["turn"] = ctx.turn
        return "me"

    model = ScriptedProvider([call("whoami", {}), text("done")])
    r = await Runner.run(Agent("a", model=model, tools=[who]), "x", deps={"k": 1})
    assert seen == {"deps": {"k": 1}, "run_id": r.run_id, "turn": 1}
    assert tool_results(r.entries)[0].output == "me"


async def test_parallel_false_tools_run_one_at_a_time_in_model_order() -> None:
    """api.md Behaviour details: parallel=False tools run one at a time, in the asked order."""
    log: list[str] = []

    @tool(parallel=False)
    async def step(n: int) -> str:
        """One step."""
        log.append(f"start{n}")
        await asyncio.sleep(0.01 * (3 - n))
        log.append(f"end{n}")
        return str(n)

    model = ScriptedProvider(
        [batch(("step", {"n": 0}), ("step", {"n": 1}), ("step", {"n": 2})), text("ok")]
    )
    await Runner.run(Agent("a", model=model, tools=[step]), "x")
    assert log == ["start0", "end0", "start1", "end1", "start2", "end2"]


async def test_run_context_turn_is_one_based_and_entries_are_live_view() -> None:
    """api.md Behaviour details: turn 1-based; entries = system, history, this run."""
    seen: list[tuple[int, list[str]]] = []
    roles: list[str] = []

    @tool
    def look(ctx: RunContext[Any]) -> str:
        """Look."""
        seen.append((ctx.turn, [e.type for e in ctx.entries]))
        first = ctx.entries[0]
        roles.append(first.role if isinstance(first, InputEntry) else "")
        return "x"

    session = InMemorySession()
    m = ScriptedProvider([text("first"), text("again"), call("look", {}), text("done")])
    a = Agent("a", instructions="sys", model=m, tools=[look])
    await Runner.run(a, "one", session=session, session_id="s")
    await Runner.run(a, "two", session=session, session_id="s")
    await Runner.run(a, "three", session=session, session_id="s")
    turn, types = seen[0]
    assert turn == 1 and roles == ["system"]
    assert types[0] == "input" and types[1:5] == [
        "input",
        "assistant_text",
        "input",
        "assistant_text",
    ]
    assert types[5:] == ["input", "tool_call"]
    assert ctx_first_is_system(m)


def ctx_first_is_system(m: ScriptedProvider) -> bool:
    return all(c[0].role == "system" and c[0].content == "sys" for c in m.calls)


async def test_run_result_entries_start_with_own_input_without_history_or_system() -> None:
    """api.md Behaviour details: RunResult.entries begins with the run's own input."""
    session = InMemorySession()
    m = ScriptedProvider([text("a1"), text("a2")])
    a = Agent("a", instructions="sys", model=m)
    await Runner.run(a, "q1", session=session, session_id="s")
    r = await Runner.run(a, "q2", session=session, session_id="s")
    assert r.entries[0] == InputEntry(role="user", content="q2")
    assert [e.type for e in r.entries] == ["input", "assistant_text"]
    loaded = await session.load("s")
    assert all(not (e.type == "input" and e.role == "system") for e in loaded)
    assert len(loaded) == 4


async def test_after_resume_result_entries_are_the_whole_run_and_turns_count_all() -> None:
    """api.md Behaviour details: after a resume, entries = whole run; turns counts every turn."""

    @tool
    def stopper(ctx: RunContext[Any]) -> str:
        """Stop."""
        ctx.cancel_token.cancel()
        return "kept"

    cp = InMemoryCheckpointer()
    m1 = ScriptedProvider([call("stopper", {})])
    with pytest.raises(RunCancelled):
        await Runner.run(
            Agent("a", model=m1, tools=[stopper]), "original", checkpoint=CheckpointOptions(cp, "r")
        )
    m2 = ScriptedProvider([call("echo", {"value": "v"}), text("finished")])
    r = await Runner.run(
        Agent("a", model=m2, tools=[stopper, echo]),
        "ignored",
        checkpoint=CheckpointOptions(cp, "r"),
    )
    assert r.output == "finished"
    assert r.entries[0] == InputEntry(role="user", content="original")
    assert [e.type for e in r.entries] == [
        "input",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "assistant_text",
    ]
    assert r.turns == 3
    assert all("ignored" not in str(msg.content) for msg in m2.calls[0])


async def test_handoff_becomes_transfer_tool_and_only_system_prompt_changes() -> None:
    """api.md Handoffs: transfer_to_<name>; body carries over; only the system prompt changes."""
    m = ScriptedProvider([call("transfer_to_billing", {}), text("billing here")])
    billing = Agent("billing", instructions="you are billing", model=m)
    front = Agent("front", instructions="you are front", model=m, handoffs=[billing])
    events, handle = await events_of(front, "refund please")
    r = await handle.result()
    assert r.output == "billing here"
    assert r.final_agent.name == "billing"
    hand = [e for e in events if isinstance(e, ev.HandoffOccurred)]
    assert [(h.from_agent.name, h.to_agent.name) for h in hand] == [("front", "billing")]
    assert m.calls[0][0].content == "you are front"
    assert m.calls[1][0].content == "you are billing"
    assert m.calls[1][1:3] == m.calls[0][1:3] or m.calls[1][1] == m.calls[0][1]


async def test_handoff_object_with_name_and_first_handoff_of_turn_wins() -> None:
    """api.md Handoffs: Handoff(target, name=None, description=None); first handoff wins.
    ``name`` is the whole tool name, as in 0.9.119 (issue 12)."""
    m = ScriptedProvider(
        [
            batch(("one", {}), ("two", {})),
            text("from one"),
        ]
    )
    one = Agent("first", model=m)
    two = Agent("second", model=m)
    front = Agent(
        "front",
        model=m,
        handoffs=[Handoff(one, name="one", description="go to one"), Handoff(two, name="two")],
    )
    r = await Runner.run(front, "x")
    assert r.final_agent.name == "first"


async def test_hooks_on_and_on_any_called_for_every_event_in_order() -> None:
    """api.md Hooks: @hooks.on(EventType), @hooks.on_any, handler(event, ctx), sync or async."""
    hooks = AgentHooks()
    any_seen: list[str] = []
    turns: list[int] = []

    @hooks.on_any
    def every(event: Any, ctx: RunContext[Any]) -> None:
        any_seen.append(type(event).__name__)

    @hooks.on(ev.TurnStarted)
    async def on_turn(event: ev.TurnStarted, ctx: RunContext[Any]) -> None:
        turns.append(event.turn)

    m = ScriptedProvider([call("echo", {"value": "v"}), text("done")])
    events, handle = await events_of(Agent("a", model=m, tools=[echo], hooks=hooks), "x")
    await handle.result()
    assert turns == [1, 2]
    assert any_seen == [type(e).__name__ for e in events]


# --- Events ---------------------------------------------------------------------------------


async def test_event_field_names_are_as_documented() -> None:
    """api.md Events: TurnStarted(turn), TextDelta(delta), ToolCallCompleted(call, result, ...)."""
    m = ScriptedProvider([call("echo", {"value": "v"}), text("done", reasoning="think")])
    events, handle = await events_of(Agent("a", model=m, tools=[echo]), "x")
    await handle.result()
    by = {type(e).__name__: e for e in events}
    assert by["TurnStarted"].turn >= 1 and by["TurnEnded"].turn >= 1
    deltas = [e for e in events if type(e).__name__ == "TextDelta"]
    assert "".join(e.delta for e in deltas) == "done"  # one character per delta
    assert "".join(e.delta for e in events if type(e).__name__ == "ReasoningDelta") == "think"
    started = by["ToolCallStarted"]
    assert started.call.name == "echo"
    done = by["ToolCallCompleted"]
    assert done.call.call_id == "call_echo"
    assert done.result == done.output == "echo:v"
    assert done.is_error is False
    assert isinstance(by["MessageCompleted"].entries, list)
    assert isinstance(by["RunCompleted"].result, lovia.RunResult)
    for name in ("ContextCompacted", "RunFailed", "HandoffOccurred", "RunStarted"):
        assert hasattr(ev, name)


def test_model_deltas_and_stream_events_share_name_but_not_field() -> None:
    """api.md Behaviour details: transcript TextDelta.text vs events TextDelta.delta."""
    assert tr.TextDelta("a").text == "a"
    assert ev.TextDelta(delta="a").delta == "a"
    assert tr.TextDelta is not ev.TextDelta


# --- Transcript -------------------------------------------------------------------------------


def test_transcript_entries_have_type_discriminator_and_fields() -> None:
    """api.md Transcript entries: the table of classes, `type` values and fields."""
    i = InputEntry(role="user", content="hi")
    a = AssistantTextEntry(content="yo")
    r = ReasoningEntry(content="hm")
    c = ToolCallEntry(call_id="c1", name="echo", arguments='{"value": "v"}')
    t = ToolResultEntry(call_id="c1", output="o")
    assert [e.type for e in (i, a, r, c, t)] == [
        "input",
        "assistant_text",
        "reasoning",
        "tool_call",
        "tool_result",
    ]
    assert a.id is None and t.is_error is False
    assert r.metadata == {} and hasattr(r, "provider") and hasattr(r, "id")
    assert tr.InputEntry is InputEntry and tr.drop_dangling_tool_calls is drop_dangling_tool_calls


def test_transcript_entries_are_immutable() -> None:
    """api.md Transcript entries: immutable values."""
    e = InputEntry(role="user", content="hi")
    with pytest.raises((AttributeError, TypeError, ValueError)):
        e.content = "changed"  # type: ignore[misc]
    assert e.content == "hi"


def test_entry_dicts_round_trip_through_json() -> None:
    """api.md Transcript entries: entry_to_dict / entry_from_dict round-trip JSON-safe dicts."""
    entries = [
        InputEntry(role="system", content="s"),
        InputEntry(role="user", content=[{"type": "text", "text": "hi"}]),
        AssistantTextEntry(content="yo", id="m1"),
        ReasoningEntry(content="hm", id="r1", provider="p", metadata={"k": [1]}),
        ToolCallEntry(call_id="c1", name="echo", arguments='{"value": "v"}'),
        ToolResultEntry(call_id="c1", output="o", is_error=True),
    ]
    for e in entries:
        d = json.loads(json.dumps(entry_to_dict(e)))
        assert d["type"] == e.type
        assert entry_from_dict(d) == e


def test_drop_dangling_tool_calls_removes_only_unanswered_calls_in_order() -> None:
    """api.md Transcript entries: drop_dangling_tool_calls keeps everything else in order."""
    entries = [
        InputEntry(role="user", content="hi"),
        ToolCallEntry(call_id="a", name="x", arguments="{}"),
        ToolCallEntry(call_id="b", name="x", arguments="{}"),
        ToolResultEntry(call_id="a", output="ra"),
        AssistantTextEntry(content="t"),
        ToolCallEntry(call_id="c", name="x", arguments="{}"),
    ]
    out = drop_dangling_tool_calls(entries)
    assert out == [entries[0], entries[1], entries[3], entries[4]]
    assert len(entries) == 6


# --- Sessions ---------------------------------------------------------------------------------


def _stores(tmp_path: pathlib.Path) -> list[Any]:
    return [InMemorySession(), SQLiteSession(str(tmp_path / "s.db"))]


async def test_session_append_returns_stored_run_id_and_existing_one_on_noop(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Sessions: append(...) -> str, generated when None; existing one on a no-op (S5)."""
    for s in _stores(tmp_path):
        e = [InputEntry(role="user", content="hi")]
        gen = await s.append("u", e)
        assert isinstance(gen, str) and gen
        assert await s.append("u", e, run_id="r1", meta={"k": 1}) == "r1"
        again = await s.append("u", [InputEntry(role="user", content="other")], run_id="r1")
        assert again == "r1"
        segs = await s.segments("u")
        assert [g.run_id for g in segs] == [gen, "r1"]
        assert isinstance(segs[1], Segment) and segs[1].meta == {"k": 1}
        assert len(await s.load("u")) == 2
        await s.clear("u")
        assert await s.load("u") == [] and await s.segments("u") == []


def test_segment_fields_and_default_meta() -> None:
    """api.md Sessions: Segment(run_id, entries, meta=None)."""
    seg = Segment(run_id="r", entries=[InputEntry(role="user", content="x")])
    assert seg.meta is None and seg.run_id == "r" and len(seg.entries) == 1


async def test_runner_appends_completed_run_as_one_segment_with_context_state(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Sessions/Context policy: one segment per run; meta carries context_state (S2)."""
    s = SQLiteSession(tmp_path / "s.db")
    m = ScriptedProvider([text("a")])
    r = await Runner.run(Agent("a", model=m), "hi", session=s, session_id="u")
    segs = await s.segments("u")
    assert [g.run_id for g in segs] == [r.run_id]
    assert segs[0].entries == r.entries
    await s.close()


async def test_trim_keeps_first_keep_chars_then_marker_saying_how_many_chars_cut(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Sessions + Behaviour details: trimmed output = first keep_chars + marker (S8)."""
    for s in _stores(tmp_path):
        big = "A" * 1000
        old = [
            InputEntry(role="user", content="q"),
            ToolCallEntry(call_id="c", name="t", arguments="{}"),
            ToolResultEntry(call_id="c", output=big),
        ]
        await s.append("u", old, run_id="r1")
        await s.append("u", old, run_id="r2")
        assert await s.trim_tool_results("u", keep_chars=10, keep_runs=1) == 1
        out = [e for e in await s.load("u") if e.type == "tool_result"]
        assert out[0].output.startswith("A" * 10)
        assert not out[0].output.startswith("A" * 11)
        assert "990" in out[0].output[10:]
        assert out[1].output == big
        assert await s.trim_tool_results("u", keep_chars=10, keep_runs=1) == 0


async def test_trim_defaults_are_400_chars_and_one_run(tmp_path: pathlib.Path) -> None:
    """api.md Sessions: trim_tool_results(session_id, *, keep_chars=400, keep_runs=1)."""
    s = SQLiteSession(tmp_path / "s.db")
    seg = [
        ToolCallEntry(call_id="c", name="t", arguments="{}"),
        ToolResultEntry(call_id="c", output="B" * 2000),
    ]
    await s.append("u", seg, run_id="r1")
    await s.append("u", seg, run_id="r2")
    assert await s.trim_tool_results("u") == 1
    out = [e for e in await s.load("u") if e.type == "tool_result"]
    assert out[0].output.startswith("B" * 400) and not out[0].output.startswith("B" * 401)
    assert "1600" in out[0].output
    await s.close()


async def test_maintenance_negative_arguments_raise_user_error(tmp_path: pathlib.Path) -> None:
    """api.md Sessions: bad arguments (negative numbers) raise UserError."""
    for s in _stores(tmp_path):
        await s.append("u", [InputEntry(role="user", content="q")], run_id="r")
        for bad in (
            s.trim_tool_results("u", keep_chars=-1),
            s.trim_tool_results("u", keep_runs=-1),
            s.rewind("u", keep_entries=-1),
        ):
            with pytest.raises(UserError):
                await bad
        assert len(await s.load("u")) == 1


async def test_rewind_count_includes_tool_calls_dropped_with_their_results(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Behaviour details: rewind's count includes dropped tool calls (S10)."""
    for s in _stores(tmp_path):
        await s.append(
            "u",
            [InputEntry(role="user", content="q0"), AssistantTextEntry(content="a0")],
            run_id="r0",
            meta={"x": 1},
        )
        await s.append(
            "u",
            [
                InputEntry(role="user", content="q"),
                ToolCallEntry(call_id="c", name="t", arguments="{}"),
                ToolResultEntry(call_id="c", output="r"),
                AssistantTextEntry(content="a"),
            ],
            run_id="r1",
            meta={"context_state": {"k": 1}},
        )
        # keep q0, a0, q, call -> result and text cut (2), and the call lost its result (1)
        removed = await s.rewind("u", keep_entries=4)
        assert removed == 3
        loaded = await s.load("u")
        assert [e.type for e in loaded] == ["input", "assistant_text", "input"]
        segs = await s.segments("u")
        assert segs[0].meta == {"x": 1} and segs[1].meta is None
        assert await s.rewind("u", keep_entries=10) == 0
        assert await s.rewind("u", keep_entries=0) == 3
        assert await s.load("u") == []


async def test_sql_stores_close_and_work_as_async_context_managers(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Sessions/Checkpoints: SQL stores have async close() and are async ctx managers."""
    async with SQLiteSession(tmp_path / "s.db") as s:
        await s.append("u", [InputEntry(role="user", content="q")], run_id="r")
    async with SQLiteCheckpointer(tmp_path / "c.db") as cp:
        await Runner.run(
            Agent("a", model=ScriptedProvider([text("x")])),
            "q",
            checkpoint=CheckpointOptions(cp, "r"),
        )
    s2 = SQLiteSession(tmp_path / "s.db")
    assert len(await s2.load("u")) == 1
    await s2.close()
    cp2 = SQLiteCheckpointer(tmp_path / "c.db")
    snap = await cp2.load("r")
    assert snap is not None and snap.status == "completed"
    await cp2.close()


async def test_sqlite_paths_may_be_str_or_pathlib_path(tmp_path: pathlib.Path) -> None:
    """api.md Behaviour details: SQLite paths may be str or pathlib.Path; wal keyword."""
    for path in (str(tmp_path / "a.db"), tmp_path / "b.db"):
        s = SQLiteSession(path, wal=True)
        cp = SQLiteCheckpointer(path, wal=True)
        m = ScriptedProvider([text("x")])
        await Runner.run(
            Agent("a", model=m),
            "q",
            session=s,
            session_id="u",
            checkpoint=CheckpointOptions(cp, "r"),
        )
        assert len(await s.load("u")) == 2
        assert (await cp.load("r")) is not None
        await s.close()
        await cp.close()
        assert await asyncio.to_thread(pathlib.Path(path).exists)


async def test_session_stores_copy_what_they_are_given_and_return(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Behaviour details: mutating a list passed to append or returned by load."""
    for s in _stores(tmp_path):
        given = [InputEntry(role="user", content="q")]
        await s.append("u", given, run_id="r")
        given.append(AssistantTextEntry(content="sneaky"))
        loaded = await s.load("u")
        assert len(loaded) == 1
        loaded.append(AssistantTextEntry(content="sneaky"))
        loaded.clear()
        segs = await s.segments("u")
        segs[0].entries.append(AssistantTextEntry(content="sneaky"))
        assert len(await s.load("u")) == 1
        assert len((await s.segments("u"))[0].entries) == 1


async def test_checkpointers_copy_what_they_are_given_and_return(tmp_path: pathlib.Path) -> None:
    """api.md Behaviour details: stores copy in and out (checkpointers too)."""
    head = RunHead(agent_name="a", usage=Usage(), turns=0, updated_at=1.0)
    for cp in (InMemoryCheckpointer(), SQLiteCheckpointer(tmp_path / "c.db")):
        given = [InputEntry(role="user", content="q")]
        await cp.append("r", given, head)
        given.append(AssistantTextEntry(content="sneaky"))
        snap = await cp.load("r")
        assert snap is not None and len(snap.entries) == 1
        snap.entries.append(AssistantTextEntry(content="sneaky"))
        again = await cp.load("r")
        assert again is not None and len(again.entries) == 1


class ListSession:
    """A user's session with only the four protocol methods."""

    def __init__(self) -> None:
        self.data: dict[str, list[Segment]] = {}

    async def segments(self, session_id: str) -> list[Segment]:
        return list(self.data.get(session_id, []))

    async def load(self, session_id: str) -> list[Any]:
        return [e for seg in self.data.get(session_id, []) for e in seg.entries]

    async def append(
        self, session_id: str, entries: Any, *, run_id: str | None = None, meta: Any = None
    ) -> str:
        segs = self.data.setdefault(session_id, [])
        for seg in segs:
            if seg.run_id == run_id:
                return seg.run_id
        rid = run_id or f"run{len(segs)}"
        segs.append(Segment(run_id=rid, entries=list(entries), meta=meta))
        return rid

    async def clear(self, session_id: str) -> None:
        self.data.pop(session_id, None)


async def test_user_session_class_with_only_four_methods_works_as_session() -> None:
    """api.md Behaviour details: a user's class with only the four methods works (S3)."""
    s = ListSession()
    m = ScriptedProvider([text("Atlas noted"), text("Atlas")])
    a = Agent("a", model=m)
    await Runner.run(a, "my project is Atlas", session=s, session_id="u")
    r = await Runner.run(a, "what is it?", session=s, session_id="u")
    assert r.output == "Atlas"
    assert any(msg.content == "my project is Atlas" for msg in m.calls[1])
    assert len(s.data["u"]) == 2


# --- Checkpoints ------------------------------------------------------------------------------


def test_checkpoint_options_unknown_policy_raises_user_error() -> None:
    """api.md Checkpoints: an unknown if_run_exists value raises UserError."""
    with pytest.raises(UserError):
        CheckpointOptions(InMemoryCheckpointer(), "r", if_run_exists="sometimes")  # type: ignore


def test_checkpoint_options_defaults() -> None:
    """api.md Checkpoints: CheckpointOptions(cp, run_id=None, *, if_run_exists="resume", ...)."""
    cp = InMemoryCheckpointer()
    o = CheckpointOptions(cp)
    assert o.checkpointer is cp and o.if_run_exists == "resume"
    assert o.delete_on_success is False and o.resume_from is None
    for policy in ("resume", "restart", "fail", "resume_only"):
        assert CheckpointOptions(cp, "r", if_run_exists=policy).if_run_exists == policy


async def test_checkpoint_run_id_none_generates_one() -> None:
    """api.md Checkpoints: run_id=None generates one."""
    cp = InMemoryCheckpointer()
    r = await Runner.run(
        Agent("a", model=ScriptedProvider([text("x")])), "q", checkpoint=CheckpointOptions(cp)
    )
    assert r.run_id
    snap = await cp.load(r.run_id)
    assert snap is not None and snap.status == "completed" and snap.output == "x"


def test_run_head_defaults() -> None:
    """api.md Checkpoints: RunHead(..., status="running", output=None, error=None, ...)."""
    h = RunHead(agent_name="a", usage=Usage(), turns=0, updated_at=1.0)
    assert h.status == "running" and h.output is None and h.error is None
    assert h.context_state == {}


async def test_run_snapshot_fields_and_head() -> None:
    """api.md Checkpoints: RunSnapshot(run_id, agent_name, entries, ...) and .head (C3)."""
    cp = InMemoryCheckpointer()
    head = RunHead(
        agent_name="a",
        usage=Usage(input_tokens=3),
        turns=2,
        status="interrupted",
        output=None,
        error={"type": "X"},
        context_state={"k": 1},
        updated_at=5.0,
    )
    await cp.append("r", [InputEntry(role="user", content="q")], head)
    await cp.append("r", [AssistantTextEntry(content="a")], head)
    snap = await cp.load("r")
    assert isinstance(snap, RunSnapshot)
    assert (snap.run_id, snap.agent_name, snap.turns, snap.status) == ("r", "a", 2, "interrupted")
    assert [e.type for e in snap.entries] == ["input", "assistant_text"]
    assert snap.usage == Usage(input_tokens=3) and snap.error == {"type": "X"}
    assert snap.context_state == {"k": 1} and snap.output is None
    assert isinstance(snap.updated_at, float)
    assert isinstance(snap.head, RunHead) and snap.head.agent_name == "a"
    await cp.delete("r")
    assert await cp.load("r") is None


async def test_checkpointed_run_segment_has_checkpoint_run_id(tmp_path: pathlib.Path) -> None:
    """api.md Behaviour details: a checkpointed run's segment has the checkpoint's run_id."""
    s = SQLiteSession(tmp_path / "s.db")
    cp = SQLiteCheckpointer(tmp_path / "c.db")
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("x")])),
        "q",
        session=s,
        session_id="u",
        checkpoint=CheckpointOptions(cp, "job-42"),
    )
    assert [g.run_id for g in await s.segments("u")] == ["job-42"]
    await s.close()
    await cp.close()


async def test_checkpoint_holds_turn_calls_and_earlier_results_when_tool_starts(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Behaviour details: when a tool starts, the checkpoint holds every call (C2)."""
    cp = SQLiteCheckpointer(tmp_path / "c.db")
    seen: list[list[str]] = []

    @tool(parallel=False)
    async def probe(n: int) -> str:
        """Probe."""
        snap = await cp.load("r")
        assert snap is not None
        seen.append([f"{e.type}:{e.call_id}" for e in snap.entries if hasattr(e, "call_id")])
        return str(n)

    m = ScriptedProvider([batch(("probe", {"n": 1}, "c1"), ("probe", {"n": 2}, "c2")), text("k")])
    await Runner.run(Agent("a", model=m, tools=[probe]), "q", checkpoint=CheckpointOptions(cp, "r"))
    assert seen[0] == ["tool_call:c1", "tool_call:c2"]
    assert seen[1] == ["tool_call:c1", "tool_call:c2", "tool_result:c1"]
    await cp.close()


async def test_if_run_exists_fail_raises_user_error_and_leaves_snapshot_unchanged() -> None:
    """api.md Behaviour details: "fail" leaves the stored snapshot unchanged (C5)."""
    cp = InMemoryCheckpointer()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("x")])), "q", checkpoint=CheckpointOptions(cp, "r")
    )
    before = await cp.load("r")
    m = ScriptedProvider([text("y")])
    with pytest.raises(UserError):
        await Runner.run(
            Agent("a", model=m), "q2", checkpoint=CheckpointOptions(cp, "r", if_run_exists="fail")
        )
    assert await cp.load("r") == before and m.calls == []
    fresh = await Runner.run(
        Agent("a", model=ScriptedProvider([text("z")])),
        "q",
        checkpoint=CheckpointOptions(cp, "new", if_run_exists="fail"),
    )
    assert fresh.output == "z"


async def test_resume_only_with_nothing_stored_raises_and_stores_nothing() -> None:
    """api.md Behaviour details: "resume_only" with nothing stored stores nothing (C5, C7)."""
    cp = InMemoryCheckpointer()
    m = ScriptedProvider([text("y")])
    with pytest.raises(UserError):
        await Runner.run(
            Agent("a", model=m),
            [],
            checkpoint=CheckpointOptions(cp, "r", if_run_exists="resume_only"),
        )
    assert await cp.load("r") is None and m.calls == []


async def test_restart_drops_the_stored_run_and_starts_again() -> None:
    """api.md Checkpoints: if_run_exists="restart" (C5)."""
    cp = InMemoryCheckpointer()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("x")])), "q1", checkpoint=CheckpointOptions(cp, "r")
    )
    m = ScriptedProvider([text("y")])
    r = await Runner.run(
        Agent("a", model=m), "q2", checkpoint=CheckpointOptions(cp, "r", if_run_exists="restart")
    )
    assert r.output == "y" and r.entries[0] == InputEntry(role="user", content="q2")


async def test_unreachable_in_flight_agent_user_error_nothing_executed_snapshot_unchanged() -> None:
    """api.md Behaviour details: unreachable in-flight agent -> UserError (C11)."""
    cp = InMemoryCheckpointer()
    m = ScriptedProvider([call("transfer_to_helper", {}), RuntimeError("crash")])
    helper = Agent("helper", model=m)
    front = Agent("front", model=m, handoffs=[helper])
    with pytest.raises((RuntimeError, LoviaError)):
        await Runner.run(front, "q", checkpoint=CheckpointOptions(cp, "r"))
    before = await cp.load("r")
    assert before is not None and before.agent_name == "helper"
    m2 = ScriptedProvider([text("x")])
    with pytest.raises(UserError):
        await Runner.run(Agent("front", model=m2), "q", checkpoint=CheckpointOptions(cp, "r"))
    assert m2.calls == [] and await cp.load("r") == before


async def test_replay_streams_only_run_completed_without_model_call() -> None:
    """api.md Agent and Runner: a replay streams exactly one event, RunCompleted (C8)."""
    cp = InMemoryCheckpointer()
    first = await Runner.run(
        Agent("a", model=ScriptedProvider([text("x")])), "q", checkpoint=CheckpointOptions(cp, "r")
    )
    m = ScriptedProvider([])
    events, handle = await events_of(
        Agent("a", model=m), "new input", checkpoint=CheckpointOptions(cp, "r")
    )
    assert len(events) == 1 and isinstance(events[0], ev.RunCompleted)
    r = await handle.result()
    assert r.output == "x" and r.finish_reason is None and m.calls == []
    assert r.usage == first.usage and r.entries == first.entries
    assert r.turns == first.turns and r.run_id == "r" and r.final_agent.name == "a"


async def test_replay_invokes_zero_hooks_and_zero_output_guardrails() -> None:
    """api.md Behaviour details: replay invokes zero hooks and zero output guardrails (C8)."""
    cp = InMemoryCheckpointer()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("secret")])),
        "q",
        checkpoint=CheckpointOptions(cp, "r"),
    )
    hooks = AgentHooks()
    calls: list[Any] = []
    hooks.on_any(lambda e, c: calls.append(e))

    def trip(output: Any, ctx: Any) -> str:
        calls.append("guard")
        return "would trip now"

    a = Agent("a", model=ScriptedProvider([]), hooks=hooks, output_guardrails=[trip])
    r = await Runner.run(a, "q", checkpoint=CheckpointOptions(cp, "r"))
    assert r.output == "secret" and calls == []


async def test_replay_with_renamed_agent_falls_back_and_warns_on_lovia_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """api.md Behaviour details: the fallback warning goes to the `lovia` logger (C11)."""
    cp = InMemoryCheckpointer()
    m = ScriptedProvider([call("transfer_to_helper", {}), text("done")])
    front = Agent("front", model=m, handoffs=[Agent("helper", model=m)])
    await Runner.run(front, "q", checkpoint=CheckpointOptions(cp, "r"))
    with caplog.at_level(logging.WARNING, logger="lovia"):
        r = await Runner.run(
            Agent("front", model=ScriptedProvider([])), "q", checkpoint=CheckpointOptions(cp, "r")
        )
    assert r.output == "done" and r.final_agent.name == "front"
    warnings = [x for x in caplog.records if x.levelno == logging.WARNING]
    assert warnings and all(x.name == "lovia" or x.name.startswith("lovia.") for x in warnings)


async def test_delete_on_success_snapshot_exists_during_run_and_is_deleted_after(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Behaviour details: delete_on_success=True, exists while running (C9)."""
    cp = SQLiteCheckpointer(tmp_path / "c.db")
    s = SQLiteSession(tmp_path / "s.db")
    during: list[Any] = []

    @tool
    async def peek() -> str:
        """Peek."""
        during.append(await cp.load("r"))
        return "p"

    m = ScriptedProvider([call("peek", {}), text("x")])
    await Runner.run(
        Agent("a", model=m, tools=[peek]),
        "q",
        session=s,
        session_id="u",
        checkpoint=CheckpointOptions(cp, "r", delete_on_success=True),
    )
    assert during[0] is not None and during[0].status == "running"
    assert await cp.load("r") is None
    assert [g.run_id for g in await s.segments("u")] == ["r"]
    m2 = ScriptedProvider([text("fresh")])
    r = await Runner.run(
        Agent("a", model=m2), "again", checkpoint=CheckpointOptions(cp, "r", delete_on_success=True)
    )
    assert r.output == "fresh" and len(m2.calls) == 1
    await cp.close()
    await s.close()


async def test_delete_on_success_keeps_snapshot_of_interrupted_run() -> None:
    """api.md Behaviour details: delete_on_success keeps the snapshot of an interrupted run."""

    @tool
    def stopper(ctx: RunContext[Any]) -> str:
        """Stop."""
        ctx.cancel_token.cancel()
        return "s"

    cp = InMemoryCheckpointer()
    m = ScriptedProvider([call("stopper", {}), text("x")])
    with pytest.raises(RunCancelled):
        await Runner.run(
            Agent("a", model=m, tools=[stopper]),
            "q",
            checkpoint=CheckpointOptions(cp, "r", delete_on_success=True),
        )
    snap = await cp.load("r")
    assert snap is not None and snap.status == "interrupted"


class FailingAppendSession(ListSession):
    async def append(
        self, session_id: str, entries: Any, *, run_id: str | None = None, meta: Any = None
    ) -> str:
        raise OSError("disk gone")


async def test_delete_on_success_keeps_snapshot_when_session_append_failed() -> None:
    """api.md Behaviour details: kept when the session append failed (C9, C12)."""
    cp = InMemoryCheckpointer()
    with pytest.raises((OSError, LoviaError)):
        await Runner.run(
            Agent("a", model=ScriptedProvider([text("x")])),
            "q",
            session=FailingAppendSession(),
            session_id="u",
            checkpoint=CheckpointOptions(cp, "r", delete_on_success=True),
        )
    snap = await cp.load("r")
    assert snap is not None and snap.status == "completed"
    good = ListSession()
    r = await Runner.run(
        Agent("a", model=ScriptedProvider([])),
        "q",
        session=good,
        session_id="u",
        checkpoint=CheckpointOptions(cp, "r", delete_on_success=True),
    )
    assert r.output == "x" and [g.run_id for g in good.data["u"]] == ["r"]


@pytest.mark.parametrize("status", ["failed", "interrupted", "running"])
async def test_resume_policy_resumes_unfinished_snapshot_and_replays_only_completed(
    status: str,
) -> None:
    """api.md Behaviour details: under "resume", failed/running/interrupted are resumed (C5)."""
    cp = InMemoryCheckpointer()
    head = RunHead(agent_name="a", usage=Usage(), turns=1, status=status, updated_at=1.0)
    await cp.append(
        "r",
        [
            InputEntry(role="user", content="orig"),
            ToolCallEntry(call_id="c", name="echo", arguments='{"value": "v"}'),
        ],
        head,
    )
    m = ScriptedProvider([text("resumed")])
    r = await Runner.run(
        Agent("a", model=m, tools=[echo]), "new", checkpoint=CheckpointOptions(cp, "r")
    )
    assert r.output == "resumed" and len(m.calls) == 1
    assert [e.type for e in r.entries] == ["input", "tool_call", "tool_result", "assistant_text"]
    assert tool_results(r.entries)[0].output == "echo:v"


async def test_resume_from_a_snapshot_the_caller_holds() -> None:
    """api.md Checkpoints: resume_from= resumes from a RunSnapshot (C9)."""
    cp = InMemoryCheckpointer()
    m1 = ScriptedProvider([call("echo", {"value": "v"}), RuntimeError("down")])
    with pytest.raises((RuntimeError, LoviaError)):
        await Runner.run(
            Agent("a", model=m1, tools=[echo]), "orig", checkpoint=CheckpointOptions(cp, "r")
        )
    snap = await cp.load("r")
    assert snap is not None
    cp2 = InMemoryCheckpointer()
    m2 = ScriptedProvider([text("done")])
    r = await Runner.run(
        Agent("a", model=m2, tools=[echo]),
        [],
        checkpoint=CheckpointOptions(cp2, "r", resume_from=snap),
    )
    assert r.output == "done" and r.entries[0] == InputEntry(role="user", content="orig")


async def test_cancelled_run_raises_run_cancelled_and_resume_only_finishes_it() -> None:
    """api.md Agent and Runner: CancelToken -> RunCancelled; resume_only with [] (C7)."""

    @tool
    def stopper(ctx: RunContext[Any]) -> str:
        """Stop."""
        ctx.cancel_token.cancel()
        return "kept"

    cp = InMemoryCheckpointer()
    with pytest.raises(RunCancelled):
        await Runner.run(
            Agent("a", model=ScriptedProvider([call("stopper", {})]), tools=[stopper]),
            "q",
            checkpoint=CheckpointOptions(cp, "r"),
        )
    m = ScriptedProvider([text("finished")])
    r = await Runner.run(
        Agent("a", model=m, tools=[stopper]),
        [],
        checkpoint=CheckpointOptions(cp, "r", if_run_exists="resume_only"),
    )
    assert r.output == "finished"
    assert m.calls[0][-1] == Message(role="tool", tool_call_id="call_stopper", content="kept")


# --- Context policy ---------------------------------------------------------------------------


async def test_result_stores_put_and_get(tmp_path: pathlib.Path) -> None:
    """api.md Context policy: ResultStore put/get; FileResultStore(dir), InMemoryResultStore."""
    for store in (FileResultStore(tmp_path / "results"), InMemoryResultStore(max_entries=1024)):
        await _maybe(store.put("k", "content"))
        assert await _maybe(store.get("k")) == "content"
        assert await _maybe(store.get("missing")) is None


async def _maybe(value: Any) -> Any:
    if asyncio.iscoroutine(value):
        return await value
    return value


async def test_noop_context_policy_disables_compaction() -> None:
    """api.md Context policy: lovia.context.NoopContextPolicy() disables it."""
    big = "Z" * 60_000

    @tool
    def dump() -> str:
        """Dump."""
        return big

    m = ScriptedProvider([call("dump", {}), text("ok")])
    a = Agent("a", model=m, tools=[dump], context_policy=NoopContextPolicy())
    await Runner.run(a, "q")
    assert any(msg.content == big for msg in m.calls[1])


async def test_compaction_8000_window_offloads_huge_result_to_recall_marker(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Behaviour details: Compaction(context_window=8_000, ...) marker names recall."""
    big = "".join(f"line {i}: some tool output text\n" for i in range(2000))
    assert len(big) > 40_000

    @tool
    def dump() -> str:
        """Dump a lot."""
        return big

    store = FileResultStore(tmp_path / "results")
    policy = Compaction(context_window=8_000, reserve_output_tokens=1_000, store=store)
    m = ScriptedProvider([call("dump", {}), text("seen"), text("later")])
    a = Agent("a", model=m, tools=[dump], context_policy=policy)
    s = InMemorySession()
    await Runner.run(a, "q", session=s, session_id="u")
    await Runner.run(a, "q2", session=s, session_id="u")
    assert len(m.calls) == 3  # no summarizer call
    segs = await s.segments("u")
    assert segs[-1].meta is not None and isinstance(segs[-1].meta.get("context_state"), dict)
    last = m.calls[-1]
    tool_msgs = [x for x in last if x.role == "tool"]
    assert tool_msgs and all(big not in str(x.content) for x in tool_msgs)
    marker = str(tool_msgs[0].content)
    assert 'recall_tool_result("' in marker
    ref = marker.split('recall_tool_result("', 1)[1].split('"', 1)[0]
    assert ref
    # the archived output comes back in full (a roomy window, so the recall itself fits)
    m2 = ScriptedProvider([call("recall_tool_result", {"ref": ref}), text("got it")])
    roomy = Agent("a", model=m2, tools=[dump], context_policy=Compaction(store=store))
    r = await Runner.run(roomy, "q3")
    assert tool_results(r.entries)[0].output == big


async def test_recall_unknown_ref_is_plain_not_found_result_not_error(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Context policy: an unknown ref gets a plain "not found" result, not an error."""
    policy = Compaction(store=InMemoryResultStore())
    m = ScriptedProvider([call("recall_tool_result", {"ref": "nope"}), text("ok")])
    r = await Runner.run(Agent("a", model=m, context_policy=policy), "q")
    res = tool_results(r.entries)[0]
    # read as: a plain result saying the ref was not found (wording free), is_error False
    assert res.is_error is False
    assert "nope" in res.output and "found" in res.output.lower()


async def test_recall_by_call_id_returns_full_output_from_transcript() -> None:
    """api.md Context policy: recall ref = a call_id returns the full output."""
    m = ScriptedProvider(
        [
            call("echo", {"value": "v"}, call_id="c9"),
            call("recall_tool_result", {"ref": "c9"}),
            text("ok"),
        ]
    )
    r = await Runner.run(
        Agent("a", model=m, tools=[echo], context_policy=Compaction(store=InMemoryResultStore())),
        "q",
    )
    assert tool_results(r.entries)[1].output == "echo:v"


async def test_context_state_goes_into_run_head() -> None:
    """api.md Context policy: carried state goes into RunHead.context_state."""
    cp = InMemoryCheckpointer()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("x")])), "q", checkpoint=CheckpointOptions(cp, "r")
    )
    snap = await cp.load("r")
    assert snap is not None and isinstance(snap.head.context_state, dict)


# --- Errors -----------------------------------------------------------------------------------


def test_error_hierarchy_and_hint() -> None:
    """api.md Errors: every listed error is a LoviaError; optional .hint."""
    for name in (
        "UserError",
        "ProviderError",
        "ContextOverflowError",
        "ToolError",
        "InvalidToolArguments",
        "MaxTurnsExceeded",
        "RunCancelled",
        "GuardrailTripped",
        "OutputValidationError",
    ):
        assert issubclass(getattr(lovia, name), LoviaError)
    try:
        CheckpointOptions(InMemoryCheckpointer(), "r", if_run_exists="bad")  # type: ignore
    except UserError as e:
        assert e.hint


async def test_max_turns_exceeded() -> None:
    """api.md Errors: MaxTurnsExceeded when max_turns is hit."""
    m = ScriptedProvider([call("echo", {"value": "1"}), call("echo", {"value": "2"}, call_id="b")])
    with pytest.raises(lovia.MaxTurnsExceeded):
        await Runner.run(Agent("a", model=m, tools=[echo]), "q", max_turns=1)


# --- Testing and providers --------------------------------------------------------------------


async def test_scripted_provider_calls_shape() -> None:
    """api.md Testing/Behaviour details: calls[i] = messages; roles; system first and once."""
    m = ScriptedProvider([call("echo", {"value": "v"}), text("done")])
    await Runner.run(Agent("a", instructions="sys", model=m, tools=[echo]), "hi")
    assert len(m.calls) == 2
    for msgs in m.calls:
        assert msgs[0] == Message(role="system", content="sys") or (
            msgs[0].role == "system" and msgs[0].content == "sys"
        )
        assert sum(x.role == "system" for x in msgs) == 1
        assert all(x.role in ("system", "user", "assistant", "tool") for x in msgs)
        assert all(isinstance(x, Message) for x in msgs)
    second = m.calls[1]
    assert [x.role for x in second] == ["system", "user", "assistant", "tool"]
    assert second[2].content in ("", None)
    assert second[3].content == "echo:v"


async def test_scripted_provider_raises_assertion_error_when_dry() -> None:
    """api.md Testing: ScriptedProvider raises AssertionError when the script runs dry."""
    with pytest.raises(AssertionError):
        await Runner.run(Agent("a", model=ScriptedProvider([])), "q")


def test_call_default_id_and_batch_ids() -> None:
    """api.md Testing: call(name, args, *, call_id=None) default id call_<name>; batch(...)."""
    assert call("echo", {"value": "v"}).tool_calls[0].id == "call_echo"
    assert call("echo", {"value": "v"}, call_id="x").tool_calls[0].id == "x"
    b = batch(("echo", {"value": "1"}), ("echo", {"value": "2"}, "mine"), ("echo", {}))
    assert [c.id for c in b.tool_calls] == ["call_0_echo", "mine", "call_2_echo"]
    assert json.loads(b.tool_calls[0].arguments) == {"value": "1"}
    t = text("hi", reasoning="why")
    assert t.content == "hi" and t.reasoning == "why"  # type: ignore[attr-defined]


class WrappingProvider:
    """A user's provider that wraps a ScriptedProvider and re-yields its deltas."""

    name = "wrapper"
    model = "wrapped"
    supports_json_schema = False

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.kinds: list[str] = []

    async def stream(
        self, entries: Any, *, tools: Any = None, response_format: Any = None, settings: Any = None
    ) -> Any:
        async for delta in self.inner.stream(
            entries, tools=tools, response_format=response_format, settings=settings
        ):
            self.kinds.append(type(delta).__name__)
            yield delta


async def test_user_provider_wrapping_scripted_provider_and_reyielding_deltas() -> None:
    """api.md Behaviour details: a user's provider may wrap a ScriptedProvider."""
    inner = ScriptedProvider([call("echo", {"value": "v"}), text("done")])
    wrapper = WrappingProvider(inner)
    r = await Runner.run(Agent("a", model=wrapper, tools=[echo]), "q")
    assert r.output == "done" and r.finish_reason is None
    assert "FinishDelta" in wrapper.kinds and "TextDelta" in wrapper.kinds
    assert len(inner.calls) == 2


class CustomDeltaProvider:
    """A provider written directly against lovia.transcript's model deltas."""

    name = "custom"
    model = "custom-1"
    supports_json_schema = False

    async def stream(
        self, entries: Any, *, tools: Any = None, response_format: Any = None, settings: Any = None
    ) -> Any:
        yield tr.TextDelta("hel")
        yield tr.TextDelta("lo")
        yield tr.EntryCompletedDelta(AssistantTextEntry(content="hello"))
        yield tr.UsageDelta(Usage(input_tokens=5, output_tokens=2))
        yield tr.FinishDelta("stop")
        yield tr.FinishDelta("length")


async def test_finish_reason_is_last_finish_delta_reason() -> None:
    """api.md Behaviour details: RunResult.finish_reason is the last FinishDelta's reason."""
    events, handle = await events_of(Agent("a", model=CustomDeltaProvider()), "q")
    r = await handle.result()
    assert r.output == "hello" and r.finish_reason == "length"
    assert r.usage == Usage(input_tokens=5, output_tokens=2)
    assert "".join(e.delta for e in events if isinstance(e, ev.TextDelta)) == "hello"
    assert hasattr(tr, "ToolCallDelta") and hasattr(tr, "ReasoningDelta")


# --- more contract surface --------------------------------------------------------------------


async def test_run_context_has_documented_attributes_and_read_only_entries() -> None:
    """api.md RunContext: deps, agent, entries (read-only view), usage, session_id, run_id, ..."""
    seen: dict[str, Any] = {}

    @tool
    def inspect(ctx: RunContext[Any]) -> str:
        """Inspect."""
        seen.update(
            deps=ctx.deps,
            agent=ctx.agent.name,
            usage=ctx.usage,
            session_id=ctx.session_id,
            run_id=ctx.run_id,
            turn=ctx.turn,
            token=ctx.cancel_token,
        )
        try:
            ctx.entries.append(AssistantTextEntry(content="x"))  # type: ignore[attr-defined]
            seen["mutable"] = True
        except (AttributeError, TypeError):
            seen["mutable"] = False
        return "ok"

    m = ScriptedProvider([call("inspect", {}), text("done")])
    r = await Runner.run(
        Agent("a", model=m, tools=[inspect]),
        "q",
        deps=42,
        session=InMemorySession(),
        session_id="s",
    )
    assert seen["deps"] == 42 and seen["agent"] == "a" and seen["session_id"] == "s"
    assert seen["run_id"] == r.run_id and seen["turn"] == 1
    assert isinstance(seen["usage"], Usage) and isinstance(seen["token"], CancelToken)
    assert seen["mutable"] is False
    assert [e.type for e in r.entries] == ["input", "tool_call", "tool_result", "assistant_text"]


class DictCheckpointer:
    """A user's checkpointer with only the three protocol methods."""

    def __init__(self) -> None:
        self.entries: dict[str, list[Any]] = {}
        self.heads: dict[str, RunHead] = {}

    async def append(self, run_id: str, entries: Any, head: RunHead) -> None:
        self.entries.setdefault(run_id, []).extend(entries)
        self.heads[run_id] = head

    async def load(self, run_id: str) -> RunSnapshot | None:
        if run_id not in self.heads:
            return None
        h = self.heads[run_id]
        return RunSnapshot(
            run_id=run_id,
            agent_name=h.agent_name,
            entries=list(self.entries[run_id]),
            usage=h.usage,
            turns=h.turns,
            status=h.status,
            output=h.output,
            error=h.error,
            context_state=h.context_state,
            updated_at=h.updated_at,
        )

    async def delete(self, run_id: str) -> None:
        self.entries.pop(run_id, None)
        self.heads.pop(run_id, None)


async def test_user_checkpointer_with_only_three_methods_resumes_and_replays() -> None:
    """api.md Checkpoints: Checkpointer protocol append(run_id, entries, head), load, delete."""

    @tool
    def stopper(ctx: RunContext[Any]) -> str:
        """Stop."""
        ctx.cancel_token.cancel()
        return "kept"

    cp = DictCheckpointer()
    m = ScriptedProvider([call("stopper", {}), text("finished")])
    a = Agent("a", model=m, tools=[stopper])
    with pytest.raises(RunCancelled):
        await Runner.run(a, "q", checkpoint=CheckpointOptions(cp, "r"))
    assert cp.heads["r"].status == "interrupted"
    r = await Runner.run(a, [], checkpoint=CheckpointOptions(cp, "r", if_run_exists="resume_only"))
    assert r.output == "finished" and cp.heads["r"].status == "completed"
    again = await Runner.run(a, "x", checkpoint=CheckpointOptions(cp, "r"))
    assert again.output == "finished" and len(m.calls) == 2
    assert [e.type for e in cp.entries["r"]] == [
        "input",
        "tool_call",
        "tool_result",
        "assistant_text",
    ]


def test_run_status_and_transcript_entry_unions() -> None:
    """api.md: RunStatus literal values; TranscriptEntry is the union of the five classes."""
    import typing

    assert set(typing.get_args(lovia.RunStatus)) == {
        "running",
        "interrupted",
        "completed",
        "failed",
    }
    union = set(typing.get_args(lovia.TranscriptEntry))
    for cls in (InputEntry, AssistantTextEntry, ReasoningEntry, ToolCallEntry, ToolResultEntry):
        assert cls in union or any(cls in typing.get_args(u) for u in union)


def test_compaction_accepts_documented_keywords() -> None:
    """api.md Context policy: Compaction(context_window=None, compact_at=0.85, ...)."""
    Compaction()
    Compaction(context_window=None, compact_at=0.85, compact_to=0.60, store=None)
    Compaction(context_window=8_000, reserve_output_tokens=1_000, store=InMemoryResultStore())


def test_postgres_stores_are_importable_with_the_session_methods() -> None:
    """api.md Sessions/Checkpoints: PostgresSession / PostgresCheckpointer, same methods."""
    for name in ("segments", "load", "append", "clear", "trim_tool_results", "rewind", "close"):
        assert callable(getattr(lovia.PostgresSession, name))
    for name in ("append", "load", "delete", "close"):
        assert callable(getattr(lovia.PostgresCheckpointer, name))


async def test_output_type_pydantic_model_is_parsed() -> None:
    """api.md Agent: output_type other than str gives a typed output."""
    from pydantic import BaseModel

    class Answer(BaseModel):
        city: str

    m = ScriptedProvider([text('{"city": "Oslo"}')])
    r = await Runner.run(Agent("a", model=m, output_type=Answer), "q")
    assert r.output == Answer(city="Oslo")


async def test_delete_on_success_deletes_only_after_the_session_append() -> None:
    """api.md Behaviour details: deleted after the session append (C9, C12)."""
    cp = InMemoryCheckpointer()
    at_append: list[Any] = []

    class Watching(ListSession):
        async def append(
            self, session_id: str, entries: Any, *, run_id: str | None = None, meta: Any = None
        ) -> str:
            at_append.append(await cp.load("r"))
            return await super().append(session_id, entries, run_id=run_id, meta=meta)

    s = Watching()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("x")])),
        "q",
        session=s,
        session_id="u",
        checkpoint=CheckpointOptions(cp, "r", delete_on_success=True),
    )
    assert at_append[0] is not None and at_append[0].status == "completed"
    assert await cp.load("r") is None


async def test_tool_schema_uses_annotated_and_field_and_validates_before_running() -> None:
    """api.md Tools: Annotated[...] and pydantic Field feed the schema; args validated first."""
    from typing import Annotated

    from pydantic import Field

    ran: list[int] = []

    @tool
    def pick(
        count: Annotated[int, Field(ge=1, description="how many to pick")],
        label: str = Field(default="x", description="a label for the pick"),
    ) -> str:
        """Pick items."""
        ran.append(count)
        return f"{count}{label}"

    dumped = json.dumps(
        dataclasses.asdict(pick) if dataclasses.is_dataclass(pick) else vars(pick), default=str
    )
    assert "how many to pick" in dumped and "a label for the pick" in dumped
    m = ScriptedProvider(
        [call("pick", {"count": 0}), call("pick", {"count": 2}, call_id="ok"), text("done")]
    )
    r = await Runner.run(Agent("a", model=m, tools=[pick]), "q")
    res = tool_results(r.entries)
    assert res[0].is_error is True and ran == [2] and res[1].output == "2x"


async def test_run_failed_event_carries_the_error_result_raises() -> None:
    """api.md Events: terminal RunFailed(error); errors surface from result()."""
    boom = RuntimeError("boom")
    events, handle = await events_of(Agent("a", model=ScriptedProvider([boom])), "x")
    assert isinstance(events[-1], ev.RunFailed)
    with pytest.raises((RuntimeError, LoviaError)) as info:
        await handle.result()
    assert events[-1].error is info.value


async def test_input_guardrail_returning_non_empty_string_trips_before_model() -> None:
    """api.md Guardrails: returning a non-empty string trips; the run fails GuardrailTripped."""

    def no_pii(messages: Any, ctx: RunContext[Any]) -> str:
        return "contains a phone number"

    m = ScriptedProvider([text("x")])
    with pytest.raises(GuardrailTripped):
        await Runner.run(Agent("a", model=m, input_guardrails=[no_pii]), "call 555-1234")


async def test_output_guardrail_raising_guardrail_tripped_fails_run() -> None:
    """api.md Guardrails: an output guardrail raising GuardrailTripped(reason) fails the run."""

    async def strict(output: Any, ctx: RunContext[Any]) -> None:
        raise GuardrailTripped("no")

    cp = InMemoryCheckpointer()
    m = ScriptedProvider([text("x")])
    with pytest.raises(GuardrailTripped):
        await Runner.run(
            Agent("a", model=m, output_guardrails=[strict]),
            "q",
            checkpoint=CheckpointOptions(cp, "r"),
        )
    snap = await cp.load("r")
    assert snap is not None and snap.status == "failed"


async def test_trim_leaves_short_outputs_and_keep_runs_zero_trims_every_run(
    tmp_path: pathlib.Path,
) -> None:
    """api.md Sessions: trim counts only trimmed results; keep_chars=0 / keep_runs=0 are legal."""
    for s in _stores(tmp_path):
        seg = [
            ToolCallEntry(call_id="a", name="t", arguments="{}"),
            ToolResultEntry(call_id="a", output="short"),
            ToolCallEntry(call_id="b", name="t", arguments="{}"),
            ToolResultEntry(call_id="b", output="L" * 300),
        ]
        await s.append("u", seg, run_id="r1")
        await s.append("u", seg, run_id="r2")
        assert await s.trim_tool_results("u", keep_chars=100, keep_runs=0) == 2
        outs = [e.output for e in await s.load("u") if e.type == "tool_result"]
        assert outs[0] == outs[2] == "short"
        assert outs[1].startswith("L" * 100) and "200" in outs[1][100:]
        # keep_chars=0 is legal; the marker would make "short" longer, so it stays (as in
        # 0.9.119), and trimmed ones stay as they are
        before = outs
        assert await s.trim_tool_results("u", keep_chars=0, keep_runs=0) == 0
        assert [e.output for e in await s.load("u") if e.type == "tool_result"] == before


async def test_unreachable_in_flight_agent_runs_no_dangling_call() -> None:
    """api.md Behaviour details: unreachable in-flight agent: nothing executed (C11)."""
    ran: list[str] = []

    @tool
    def work() -> str:
        """Work."""
        ran.append("work")
        if len(ran) == 1:
            raise RunCancelled("stop mid-call")
        return "worked"

    cp = InMemoryCheckpointer()
    m = ScriptedProvider([call("transfer_to_helper", {}), call("work", {})])
    front = Agent("front", model=m, handoffs=[Agent("helper", model=m, tools=[work])])
    with pytest.raises(RunCancelled):
        await Runner.run(front, "q", checkpoint=CheckpointOptions(cp, "r"))
    before = await cp.load("r")
    assert before is not None and before.agent_name == "helper"
    m2 = ScriptedProvider([text("x")])
    renamed = Agent(
        "front", model=m2, tools=[work], handoffs=[Agent("aide", model=m2, tools=[work])]
    )
    with pytest.raises(UserError):
        await Runner.run(renamed, [], checkpoint=CheckpointOptions(cp, "r"))
    assert ran == ["work"] and m2.calls == [] and await cp.load("r") == before


async def test_run_context_entries_are_live_within_a_turn() -> None:
    """api.md Behaviour details: RunContext.entries is the live transcript (sequential tools)."""
    views: list[list[str]] = []

    @tool(parallel=False)
    def look(n: int, ctx: RunContext[Any]) -> str:
        """Look."""
        views.append([f"{e.type}:{getattr(e, 'call_id', '')}" for e in ctx.entries])
        return str(n)

    m = ScriptedProvider([batch(("look", {"n": 1}, "a"), ("look", {"n": 2}, "b")), text("ok")])
    r = await Runner.run(Agent("x", model=m, tools=[look]), "q")
    assert views[0] == ["input:", "tool_call:a", "tool_call:b"]
    assert views[1] == ["input:", "tool_call:a", "tool_call:b", "tool_result:a"]
    assert r.turns == 2
