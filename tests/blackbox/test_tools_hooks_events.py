"""api.md "Tools, context, handoffs, hooks, guardrails", "Events" and "Testing", checked from
outside: each behaviour was run on this project and on lovia 0.9.119 and agrees on both (or
api.md decides, said where it does)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from pydantic import BaseModel

from lovia import (
    Agent,
    AgentHooks,
    GuardrailTripped,
    Handoff,
    InMemorySession,
    MaxTurnsExceeded,
    RunContext,
    Runner,
    ToolError,
    UserError,
    tool,
)
from lovia import events as ev
from lovia.providers import register_provider
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import (
    EntryCompletedDelta,
    FinishDelta,
    InputEntry,
    ReasoningEntry,
    ToolCallDelta,
    UsageDelta,
)
from lovia.transcript import ReasoningDelta as ModelReasoningDelta
from lovia.transcript import TextDelta as ModelTextDelta


@tool  # async: the calls of one turn finish in call order (sync ones, on threads: any order)
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def boom(x: int) -> str:
    """Always fails."""
    raise ValueError("kaboom")


@tool
def refuse() -> str:
    """Fails the lovia way."""
    raise ToolError("nope")


class Point(BaseModel):
    x: int


@tool
def point() -> Point:
    """A pydantic value."""
    return Point(x=1)


async def _events(agent: Agent, prompt: Any = "go", **kw: Any) -> tuple[list[Any], Any]:
    handle = Runner.stream(agent, prompt, **kw)
    seen = [e async for e in handle]
    try:
        return seen, await handle.result()
    except Exception as exc:  # the stream never raises; result() does
        return seen, exc


# -- tools --------------------------------------------------------------------------------


async def test_every_bad_call_of_a_batch_gets_one_error_result_and_the_run_goes_on() -> None:
    """Wrong type, missing argument, a raising tool, a ToolError and an unknown tool: five
    error results the model sees on its next call, not a failed run."""
    model = ScriptedProvider(
        [
            batch(
                ("add", {"a": 1, "b": "x"}, "c1"),
                ("add", {"a": 1}, "c2"),
                ("boom", {"x": 1}, "c3"),
                ("refuse", {}, "c4"),
                ("nosuch", {}, "c5"),
                ("add", {"a": 1, "b": 2}, "c6"),
            ),
            text("ok"),
        ]
    )
    result = await Runner.run(Agent("a", model=model, tools=[add, boom, refuse]), "go")

    assert result.output == "ok"
    results = {e.call_id: e for e in result.entries if e.type == "tool_result"}
    assert sorted(results) == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert [results[c].is_error for c in sorted(results)] == [True] * 5 + [False]
    assert results["c6"].output == "3"
    assert "kaboom" in results["c3"].output and "nope" in results["c4"].output
    assert "nosuch" in results["c5"].output
    sent = {m.tool_call_id: m.content for m in model.calls[1] if m.role == "tool"}
    assert sent == {c: results[c].output for c in results}


async def test_a_tool_past_its_timeout_is_an_error_result() -> None:
    @tool(timeout=0.05)
    async def slow() -> str:
        await asyncio.sleep(30)
        return "late"

    model = ScriptedProvider([call("slow", {}), text("ok")])
    result = await Runner.run(Agent("a", model=model, tools=[slow]), "go")

    (res,) = [e for e in result.entries if e.type == "tool_result"]
    assert res.is_error and res.output != "late" and result.output == "ok"


@pytest.mark.parametrize("where", ["tool", "agent"])
async def test_a_long_output_is_cut_to_the_limit_and_says_so(where: str) -> None:
    """``@tool(max_output_chars=...)`` and ``Agent(max_tool_output_chars=...)``."""
    if where == "tool":

        @tool(max_output_chars=50)
        def big() -> str:
            return "y" * 500

        agent = Agent("a", model=ScriptedProvider([call("big", {}), text("ok")]), tools=[big])
    else:

        @tool
        def big() -> str:
            return "y" * 500

        agent = Agent(
            "a",
            model=ScriptedProvider([call("big", {}), text("ok")]),
            tools=[big],
            max_tool_output_chars=50,
        )
    result = await Runner.run(agent, "go")

    (res,) = [e for e in result.entries if e.type == "tool_result"]
    assert not res.is_error
    assert res.output.startswith("y" * 10) and len(res.output) < 500
    assert "500" in res.output  # it says how long the output was


async def test_a_run_context_parameter_is_not_in_the_schema_and_sees_the_run() -> None:
    seen: dict[str, Any] = {}

    @tool
    def look(ctx: RunContext[Any], q: str) -> str:
        """Look."""
        seen.update(deps=ctx.deps, turn=ctx.turn, agent=ctx.agent.name, q=q)
        return "k"

    assert list(look.openai_schema()["function"]["parameters"]["properties"]) == ["q"]
    model = ScriptedProvider([call("look", {"q": "x"}), text("ok")])
    await Runner.run(Agent("a", model=model, tools=[look]), "go", deps={"k": 1})

    assert seen == {"deps": {"k": 1}, "turn": 1, "agent": "a", "q": "x"}


async def test_a_structured_return_value_is_sent_as_json_and_kept_raw_on_the_event() -> None:
    seen, result = await _events(
        Agent("a", model=ScriptedProvider([call("point", {}), text("ok")]), tools=[point])
    )
    (done,) = [e for e in seen if isinstance(e, ev.ToolCallCompleted)]
    assert done.result == Point(x=1) and json.loads(done.output) == {"x": 1}
    assert not done.is_error and done.call.name == "point"
    (res,) = [e for e in result.entries if e.type == "tool_result"]
    assert json.loads(res.output) == {"x": 1}


async def test_serial_tools_never_overlap_any_call_and_run_in_the_models_order() -> None:
    """``parallel=False`` calls mixed with parallel ones in one turn: each serial call runs
    alone, and calls start (and results are recorded) in the order the model asked."""
    log: list[tuple[str, int]] = []

    @tool(parallel=False)
    async def s(n: int) -> str:
        log.append(("start", n))
        await asyncio.sleep(0.01 * (6 - n))
        log.append(("end", n))
        return f"s{n}"

    @tool
    async def p(n: int) -> str:
        log.append(("start", n))
        await asyncio.sleep(0.01 * (6 - n))
        log.append(("end", n))
        return f"p{n}"

    asked = [("s", {"n": 1}), ("p", {"n": 2}), ("s", {"n": 3}), ("p", {"n": 4}), ("s", {"n": 5})]
    model = ScriptedProvider([batch(*asked), text("ok")])
    result = await Runner.run(Agent("a", model=model, tools=[s, p]), "go")

    assert [e.output for e in result.entries if e.type == "tool_result"] == [
        "s1",
        "p2",
        "s3",
        "p4",
        "s5",
    ]
    for n in (1, 3, 5):  # a serial call's start is followed directly by its own end
        assert log[log.index(("start", n)) + 1] == ("end", n)
    assert [n for kind, n in log if kind == "start"] == [1, 2, 3, 4, 5]


# -- handoffs ------------------------------------------------------------------------------


async def test_the_first_handoff_of_a_turn_wins_and_the_others_are_error_results() -> None:
    agents: list[str] = []

    @tool
    def who(ctx: RunContext[Any]) -> str:
        agents.append(ctx.agent.name)
        return ctx.agent.name

    model = ScriptedProvider(
        [
            batch(("transfer_to_billing_team", {}), ("transfer_to_c", {}), ("who", {})),
            call("who", {}, call_id="w2"),
            text("end"),
        ]
    )
    billing = Agent("Billing Team", instructions="I am B", tools=[who], model=model)
    c = Agent("c", instructions="I am C", model=model)
    a = Agent("a", instructions="I am A", model=model, tools=[who], handoffs=[billing, c])
    seen, result = await _events(a, "hi")

    assert result.final_agent.name == "Billing Team" and result.output == "end"
    assert agents == ["a", "Billing Team"]  # the turn's own calls still ran as "a"
    outs = {e.call_id: e for e in result.entries if e.type == "tool_result"}
    second = [o for o in outs.values() if o.is_error]
    assert len(second) == 1 and "first" in second[0].output.lower()
    (hand,) = [e for e in seen if isinstance(e, ev.HandoffOccurred)]
    assert (hand.from_agent.name, hand.to_agent.name) == ("a", "Billing Team")
    names = [type(e).__name__ for e in seen]
    assert names.index("HandoffOccurred") == names.index("TurnEnded") + 1
    assert [(m.role, m.content) for m in model.calls[1][:2]] == [
        ("system", "I am B"),
        ("user", "hi"),
    ]


async def test_handoffs_are_offered_as_tools_named_after_the_agent_or_the_handoff() -> None:
    model = ScriptedProvider([text("x")])
    billing = Agent("Billing Team", model=model)
    c = Agent("c", model=model)
    a = Agent("a", model=model, handoffs=[billing, Handoff(c, name="custom", description="to c")])
    await Runner.run(a, "go")

    offered = {t["name"]: t for t in model.tools[0]}
    assert {"transfer_to_billing_team", "custom"} <= set(offered)
    assert offered["custom"]["description"] == "to c"
    assert "reason" in offered["custom"]["parameters"]["properties"]
    assert offered["custom"]["parameters"]["required"] == []


# -- hooks ---------------------------------------------------------------------------------


async def test_hooks_see_every_event_in_stream_order_any_handlers_first() -> None:
    order: list[str] = []
    every: list[Any] = []
    hooks = AgentHooks()

    def typed_1(event: Any, ctx: Any) -> None:
        order.append("typed 1")

    async def any_handler(event: Any, ctx: Any) -> None:
        every.append(event)
        if isinstance(event, ev.TurnStarted):
            order.append("any")

    def typed_2(event: Any, ctx: Any) -> None:
        order.append("typed 2")

    assert hooks.on(ev.TurnStarted)(typed_1) is typed_1  # decorators give the function back
    assert hooks.on_any(any_handler) is any_handler
    hooks.on(ev.TurnStarted)(typed_2)
    model = ScriptedProvider([call("add", {"a": 1, "b": 2}), text("fin")])
    seen, _ = await _events(Agent("a", model=model, tools=[add], hooks=hooks))

    assert every == seen  # same objects, same order, the terminal event included
    assert order == ["any", "typed 1", "typed 2"] * 2  # two turns


async def test_a_raising_hook_does_not_fail_the_run() -> None:
    hooks = AgentHooks()

    @hooks.on(ev.TurnStarted)
    def bad(event: Any, ctx: Any) -> None:
        raise RuntimeError("hook bug")

    result = await Runner.run(Agent("a", model=ScriptedProvider([text("x")]), hooks=hooks), "go")
    assert result.output == "x"


async def test_hooks_get_run_failed_with_the_error_result_raises() -> None:
    failed: list[Any] = []
    hooks = AgentHooks()
    hooks.on(ev.RunFailed)(lambda event, ctx: failed.append(event.error))
    model = ScriptedProvider([call("add", {"a": 1, "b": 2})])
    seen, error = await _events(
        Agent("a", model=model, tools=[add], hooks=hooks), "go", max_turns=1
    )

    assert isinstance(error, MaxTurnsExceeded) and failed == [error]
    assert isinstance(seen[-1], ev.RunFailed) and seen[-1].error is error


# -- guardrails ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["input", "output"])
@pytest.mark.parametrize("verdict", [None, "", False, 0])
async def test_a_falsy_guardrail_verdict_passes(kind: str, verdict: Any) -> None:
    agent = Agent(
        "a", model=ScriptedProvider([text("x")]), **{f"{kind}_guardrails": [lambda m, c: verdict]}
    )
    assert (await Runner.run(agent, "go")).output == "x"


@pytest.mark.parametrize("kind", ["input", "output"])
@pytest.mark.parametrize("verdict", ["nope", "   ", GuardrailTripped("stop")])
async def test_a_guardrail_trips_on_a_string_or_a_raise(kind: str, verdict: Any) -> None:
    """An input guardrail trips before the model is called; an output one after."""

    async def guard(value: Any, ctx: Any) -> Any:
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

    model = ScriptedProvider([text("x")])
    agent = Agent("a", model=model, **{f"{kind}_guardrails": [guard]})
    seen, error = await _events(agent)

    assert isinstance(error, GuardrailTripped)
    assert len(model.calls) == (0 if kind == "input" else 1)
    assert [type(e) for e in seen if isinstance(e, ev.RunCompleted | ev.RunFailed)] == [
        ev.RunFailed
    ]


async def test_an_input_guardrail_reads_the_prompt_once_and_the_output_one_the_output() -> None:
    session = InMemorySession()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("h1")])), "first", session=session, session_id="s"
    )
    seen: list[Any] = []

    def ig(messages: Any, ctx: Any) -> None:
        seen.append([(m.role, m.content) for m in messages])
        assert isinstance(ctx, RunContext)

    def og(output: Any, ctx: Any) -> None:
        seen.append(output)

    model = ScriptedProvider([call("add", {"a": 1, "b": 2}), text("done")])
    agent = Agent(
        "a",
        instructions="SYS",
        model=model,
        tools=[add],
        input_guardrails=[ig],
        output_guardrails=[og],
    )
    await Runner.run(agent, "second", session=session, session_id="s")

    assert seen == [
        [("system", "SYS"), ("user", "first"), ("assistant", "h1"), ("user", "second")],
        "done",
    ]


# -- events --------------------------------------------------------------------------------


async def test_reasoning_streams_before_the_text_and_both_land_in_one_message() -> None:
    seen, result = await _events(Agent("a", model=ScriptedProvider([text("hey", reasoning="hm")])))

    names = [type(e).__name__ for e in seen]
    assert names == [
        "RunStarted",
        "TurnStarted",
        "ReasoningDelta",
        "ReasoningDelta",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "MessageCompleted",
        "TurnEnded",
        "RunCompleted",
    ]
    assert "".join(e.delta for e in seen if isinstance(e, ev.ReasoningDelta)) == "hm"
    assert "".join(e.delta for e in seen if isinstance(e, ev.TextDelta)) == "hey"
    (done,) = [e for e in seen if isinstance(e, ev.MessageCompleted)]
    assert [type(e) for e in done.entries] == [ReasoningEntry, type(result.entries[-1])]
    assert seen[-1].result is result or seen[-1].result.output == result.output


async def test_a_failing_tool_emits_tool_call_failed_then_an_error_completion() -> None:
    seen, _ = await _events(
        Agent("a", model=ScriptedProvider([call("boom", {"x": 1}), text("ok")]), tools=[boom])
    )
    tool_events = [
        e
        for e in seen
        if isinstance(e, ev.ToolCallStarted | ev.ToolCallFailed | ev.ToolCallCompleted)
    ]
    assert [type(e).__name__ for e in tool_events] == [
        "ToolCallStarted",
        "ToolCallFailed",
        "ToolCallCompleted",
    ]
    assert isinstance(tool_events[1].error, ValueError)
    assert tool_events[2].is_error and "kaboom" in tool_events[2].output
    assert tool_events[0].call.name == "boom" and tool_events[0].call.id == "call_boom"


# -- providers and the scripted model ---------------------------------------------------------


async def test_a_custom_provider_gets_tools_in_openai_function_shape() -> None:
    """Found by this test: a user's provider got ``{"name", "description", "parameters"}``;
    0.9.119 (whose behaviour decides, api.md being silent) passes OpenAI's
    ``{"type": "function", "function": {...}}``, which a provider can forward as it is."""
    got: list[Any] = []
    inner = ScriptedProvider([call("add", {"a": 1, "b": 2}), text("ok")])

    class Forwarding:
        name = "fwd"
        model = "fwd"
        supports_json_schema = False

        async def stream(
            self,
            entries: Sequence[Any],
            *,
            tools: Any = None,
            response_format: Any = None,
            settings: Any = None,
        ) -> AsyncIterator[Any]:
            got.append(tools)
            async for delta in inner.stream(entries, tools=tools, settings=settings):
                yield delta

    result = await Runner.run(Agent("a", model=Forwarding(), tools=[add]), "go")

    assert result.output == "ok"
    (spec,) = [t for t in got[0] if t["function"]["name"] == "add"]
    assert spec == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
    }


async def test_an_agent_may_name_a_vendor_registered_after_it_is_built() -> None:
    """Found by this test: ``Agent(model="vendor:x")`` raised before ``register_provider``
    could run; 0.9.119 builds the agent and resolves the string when it runs."""
    agent = Agent("a", model="bb2latevendor:small")
    register_provider("bb2latevendor", lambda name: ScriptedProvider([text(f"hi from {name}")]))

    assert (await Runner.run(agent, "go")).output == "hi from small"


async def test_an_unknown_vendor_fails_its_run_with_one_run_failed() -> None:
    seen, error = await _events(Agent("a", model="bb2nosuchvendor:x"))

    assert isinstance(error, UserError) and error.hint
    assert [type(e) for e in seen] == [ev.RunFailed]


async def test_a_mistyped_builtin_prefix_fails_its_run_and_says_did_you_mean() -> None:
    seen, error = await _events(Agent("a", model="opnai:gpt-4.1"))  # built, as in 0.9.119

    assert isinstance(error, UserError) and "did you mean 'openai'" in error.message
    assert [type(e) for e in seen] == [ev.RunFailed]


async def test_the_scripted_model_streams_what_a_real_provider_would() -> None:
    model = ScriptedProvider(
        [
            text("hi", reasoning="r"),
            call("t1", {"x": 2}),
            batch(("t1", {"x": 1}), ("t1", {}, "cid")),
        ]
    )
    prompt = [InputEntry(role="user", content="q")]
    first = [d async for d in model.stream(prompt)]
    second = [d async for d in model.stream(prompt)]
    third = [d async for d in model.stream(prompt)]

    assert [type(d) for d in first] == [
        ModelReasoningDelta,
        EntryCompletedDelta,
        ModelTextDelta,
        ModelTextDelta,
        UsageDelta,
        FinishDelta,
    ]
    assert isinstance(first[1].entry, ReasoningEntry) and first[1].entry.content == "r"
    assert [d.text for d in first[2:4]] == ["h", "i"]
    assert (first[4].usage.input_tokens, first[4].usage.output_tokens) == (1, 1)
    assert first[5].reason is None
    calls = [d for d in second + third if isinstance(d, ToolCallDelta)]
    assert [(d.call_id, d.name, json.loads(d.arguments)) for d in calls] == [
        ("call_t1", "t1", {"x": 2}),
        ("call_0_t1", "t1", {"x": 1}),
        ("cid", "t1", {}),
    ]
    with pytest.raises(AssertionError):
        [d async for d in model.stream(prompt)]


async def test_scripted_calls_show_history_tool_results_and_no_reasoning() -> None:
    session = InMemorySession()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("h1")])), "first", session=session, session_id="s"
    )
    model = ScriptedProvider(
        [
            call("add", {"a": 1, "b": 1}),
            batch(("add", {"a": 1, "b": 2}), ("add", {"a": 2, "b": 2})),
            text("fin", reasoning="why"),
        ]
    )
    agent = Agent("a", instructions="SYS", model=model, tools=[add])
    await Runner.run(agent, "second", session=session, session_id="s")
    after = ScriptedProvider([text("z")])
    await Runner.run(Agent("a", model=after), "third", session=session, session_id="s")

    last = [(m.role, m.content) for m in model.calls[2]]
    assert last[:4] == [
        ("system", "SYS"),
        ("user", "first"),
        ("assistant", "h1"),
        ("user", "second"),
    ]
    assert [r for r, _ in last[4:]] == ["assistant", "tool", "assistant", "tool", "tool"]
    assert [c for r, c in last if r == "tool"] == ["2", "3", "4"]
    assert all(not c for r, c in last if r == "assistant" and c != "h1")
    assert [(m.role, m.content) for m in after.calls[0]][-2:] == [
        ("assistant", "fin"),
        ("user", "third"),
    ]
    assert all(m.role != "system" for m in after.calls[0])  # no instructions: no system
