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
    result = await Runner.run(entry, "x")
    # the switch waits for the turn's calls: the call after the transfer was asked for by
    # entry and runs as entry (as in 0.9.119); the next turn is b's
    assert order == ["before@entry", "after@entry"]
    assert result.final_agent is b


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


async def test_input_guardrail_sees_system_history_and_new_input() -> None:
    from lovia import InMemorySession

    seen: list[list[tuple[str, Any]]] = []

    def look(messages: list[Message], ctx: RunContext[None]) -> None:
        seen.append([(m.role, m.content) for m in messages])

    session = InMemorySession()
    agent = Agent(
        "a",
        instructions="Be brief.",
        model=ScriptedProvider([text("one"), text("two")]),
        input_guardrails=[look],
    )
    await Runner.run(agent, "first", session=session, session_id="s")
    await Runner.run(agent, "second", session=session, session_id="s")
    assert all(isinstance(m, tuple) for m in seen[0])
    assert seen == [
        [("system", "Be brief."), ("user", "first")],
        [("system", "Be brief."), ("user", "first"), ("assistant", "one"), ("user", "second")],
    ]


async def test_guardrail_verdicts_true_string_and_order() -> None:
    def first(output: Any, ctx: RunContext[None]) -> str:
        return "first reason"

    def second(output: Any, ctx: RunContext[None]) -> str:  # never reached
        raise AssertionError("the first violation wins")

    agent = Agent("a", model=ScriptedProvider([text("x")]), output_guardrails=[first, second])
    with pytest.raises(GuardrailTripped) as caught:
        await Runner.run(agent, "q")
    assert str(caught.value) == "output guardrail: first reason"
    assert caught.value.guardrail == "first" and caught.value.hint is None

    passing = [lambda o, c: None, lambda o, c: False, lambda o, c: ""]
    agent = Agent("a", model=ScriptedProvider([text("ok")]), output_guardrails=passing)
    assert (await Runner.run(agent, "q")).output == "ok"

    agent = Agent("a", model=ScriptedProvider([text("x")]), input_guardrails=[lambda m, c: True])
    handle = Runner.stream(agent, "q")
    events = [e async for e in handle]
    assert events[-1].type == "run_failed"
    assert str(events[-1].error) == "input guardrail rejected the value"  # type: ignore[attr-defined]


async def test_handoff_on_handoff_runs_before_the_transfer_with_the_reason() -> None:
    log: list[Any] = []

    async def noted(args: dict[str, Any], ctx: RunContext[None]) -> None:
        log.append((args, ctx.agent.name))

    billing = Agent("billing", model=ScriptedProvider([text("refunded")]))
    triage = Agent(
        "triage",
        model=ScriptedProvider([call("transfer_to_billing", {"reason": "twice"}, call_id="h")]),
        handoffs=[Handoff(billing, on_handoff=noted)],
    )
    result = await Runner.run(triage, "charged twice")
    assert log == [({"reason": "twice"}, "triage")]
    assert result.final_agent is billing and result.output == "refunded"
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outputs == ["Transferred to billing (twice)"]


async def test_a_failing_on_handoff_is_a_tool_error_and_no_transfer() -> None:
    def refuse(args: dict[str, Any], ctx: RunContext[None]) -> None:
        raise ValueError("billing is closed")

    billing = Agent("billing", model=ScriptedProvider([]))
    triage = Agent(
        "triage",
        model=ScriptedProvider([call("transfer_to_billing", call_id="h"), text("I will help")]),
        handoffs=[Handoff(billing, on_handoff=refuse)],
    )
    result = await Runner.run(triage, "q")
    assert result.final_agent is triage and result.output == "I will help"
    (res,) = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert res.is_error and "billing is closed" in res.output


async def test_only_the_first_handoff_of_a_turn_fires() -> None:
    fired: list[str] = []
    alpha = Agent("alpha", model=ScriptedProvider([text("alpha here")]))
    beta = Agent("beta", model=ScriptedProvider([]))
    triage = Agent(
        "triage",
        model=ScriptedProvider(
            [batch(("transfer_to_alpha", {}, "h1"), ("transfer_to_beta", {}, "h2"))]
        ),
        handoffs=[
            Handoff(alpha, on_handoff=lambda a, c: fired.append("alpha")),
            Handoff(beta, on_handoff=lambda a, c: fired.append("beta")),
        ],
    )
    result = await Runner.run(triage, "q")
    assert fired == ["alpha"] and result.final_agent is alpha
    errors = [(e.call_id, e.is_error) for e in result.entries if isinstance(e, ToolResultEntry)]
    assert errors == [("h1", False), ("h2", True)]


async def test_handoff_tool_names_custom_and_slugged() -> None:
    target = Agent("billing", model=ScriptedProvider([text("billing here")]))
    triage = Agent(
        "t",
        model=ScriptedProvider([call("go_billing", {"reason": "money"})]),
        handoffs=[Handoff(target, name="go_billing")],
    )
    assert (await Runner.run(triage, "q")).output == "billing here"
    names = [
        Handoff(Agent(n)).tool_name
        for n in ("Billing Team", "Crème brûlée", "a-b", "日本", "x" * 80)
    ]
    assert names[:3] == ["transfer_to_billing_team", "transfer_to_crme_brle", "transfer_to_a_b"]
    assert (
        names[3].startswith("transfer_to_agent_") and len(names[3]) == len("transfer_to_agent_") + 8
    )
    assert len(names[4]) == 64 and names[4] != Handoff(Agent("x" * 81)).tool_name
