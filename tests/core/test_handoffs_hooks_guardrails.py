"""Handoffs, hooks and guardrails."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    AgentHooks,
    GuardrailTripped,
    Handoff,
    RunContext,
    Runner,
    ToolResultEntry,
    tool,
)
from lovia.events import (
    HandoffOccurred,
    RunCompleted,
    RunEvent,
    RunStarted,
    ToolCallStarted,
)
from lovia.messages import Message
from lovia.testing import ScriptedProvider, batch, call, text


def two_agents(script: list[Any]) -> tuple[Agent, Agent, ScriptedProvider]:
    model = ScriptedProvider(script)
    billing = Agent("billing", instructions="You are billing.", model=model)
    triage = Agent("triage", instructions="You are triage.", model=model, handoffs=[billing])
    return triage, billing, model


async def test_handoff_target_sees_the_whole_body_with_its_own_system_prompt() -> None:
    triage, _, model = two_agents([call("transfer_to_billing"), text("refund done")])
    result = await Runner.run(triage, "refund please")
    assert result.final_agent.name == "billing"
    first, second = model.calls
    assert first[0] == Message(role="system", content="You are triage.")
    assert second[0] == Message(role="system", content="You are billing.")
    assert second[1:3] == first[1:3] or second[1] == first[1]
    assert any(m.role == "tool" for m in second)  # the handoff call and result carried over
    assert [t["name"] for t in model.tools[0]] == ["transfer_to_billing", "recall_tool_result"]


async def test_first_handoff_of_a_turn_wins() -> None:
    model = ScriptedProvider(
        [
            batch(("transfer_to_a", {}, "h1"), ("transfer_to_b", {}, "h2")),
            text("A speaking"),
        ]
    )
    a = Agent("a", instructions="A", model=model)
    b = Agent("b", instructions="B", model=model)
    entry = Agent("entry", model=model, handoffs=[a, Handoff(b, description="Go to B")])
    handle = Runner.stream(entry, "x")
    events = [e async for e in handle]
    result = await handle.result()
    assert result.final_agent.name == "a"
    outs = {e.call_id: e.output for e in result.entries if isinstance(e, ToolResultEntry)}
    assert "Transferred to a" in outs["h1"] and "Handoff not performed" in outs["h2"]
    handoffs = [e for e in events if isinstance(e, HandoffOccurred)]
    assert [(h.from_agent.name, h.to_agent.name) for h in handoffs] == [("entry", "a")]


async def test_handoff_runs_alone_as_a_barrier() -> None:
    order: list[str] = []

    @tool
    async def note(tag: str, ctx: RunContext[None]) -> str:
        order.append(f"{tag}@{ctx.agent.name}")
        return tag

    model = ScriptedProvider(
        [
            batch(("note", {"tag": "before"}), ("transfer_to_b", {}), ("note", {"tag": "after"})),
            text("ok"),
        ]
    )
    b = Agent("b", model=model, tools=[note])
    entry = Agent("entry", model=model, tools=[note], handoffs=[b])
    await Runner.run(entry, "x")
    assert order == ["before@entry", "after@b"]


async def test_hooks_see_every_event_in_order() -> None:
    hooks = AgentHooks()
    seen_any: list[str] = []
    seen_tools: list[str] = []

    @hooks.on_any
    def record(event: RunEvent, ctx: RunContext[None]) -> None:
        seen_any.append(event.type)

    @hooks.on(ToolCallStarted)
    async def on_tool(event: ToolCallStarted, ctx: RunContext[None]) -> None:
        seen_tools.append(event.call.name)

    @tool
    def ping() -> str:
        return "pong"

    model = ScriptedProvider([call("ping"), text("done")])
    agent = Agent("a", model=model, tools=[ping], hooks=hooks)
    handle = Runner.stream(agent, "x")
    streamed = [e.type async for e in handle]
    assert seen_any == streamed
    assert seen_tools == ["ping"]


async def test_hooks_on_needs_an_event_class() -> None:
    from lovia import UserError

    with pytest.raises(UserError):
        AgentHooks().on("RunStarted")  # type: ignore[arg-type]


async def test_a_raising_hook_is_logged_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Hooks observe (as in 0.9.119): a broken handler must not abort the run it watches."""
    hooks = AgentHooks()
    seen: list[str] = []

    @hooks.on(RunStarted)
    def fail(event: RunEvent, ctx: RunContext[None]) -> None:
        raise RuntimeError("hook bug")

    @hooks.on(RunStarted)
    def after(event: RunEvent, ctx: RunContext[None]) -> None:
        seen.append("after")

    agent = Agent("a", model=ScriptedProvider([text("x")]), hooks=hooks)
    with caplog.at_level("WARNING", logger="lovia.hooks"):
        assert (await Runner.run(agent, "x")).output == "x"
    assert seen == ["after"]
    assert any("hook bug" in (r.exc_text or "") or "fail" in r.getMessage() for r in caplog.records)


async def test_input_guardrail_trips_by_returning_a_reason() -> None:
    def no_secrets(messages: list[Any], ctx: RunContext[None]) -> str | None:
        return "contains a secret" if "password" in messages[-1].content else None

    model = ScriptedProvider([text("fine")])
    agent = Agent("a", model=model, input_guardrails=[no_secrets])
    with pytest.raises(GuardrailTripped, match="contains a secret"):
        await Runner.run(agent, "my password is hunter2")
    assert model.calls == []  # the model never saw it
    assert (await Runner.run(agent, "hello")).output == "fine"


async def test_output_guardrail_trips_by_raising() -> None:
    async def polite(output: Any, ctx: RunContext[None]) -> None:
        if "stupid" in output:
            raise GuardrailTripped("impolite answer")

    agent = Agent("a", model=ScriptedProvider([text("that is stupid")]), output_guardrails=[polite])
    handle = Runner.stream(agent, "x")
    events = [e async for e in handle]
    assert events[-1].type == "run_failed"
    assert not any(isinstance(e, RunCompleted) for e in events)
    with pytest.raises(GuardrailTripped, match="impolite"):
        await handle.result()
