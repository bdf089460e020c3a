"""Issue 13's bug: after a handoff, the receiving agent's hooks see each of its tool calls as a
Started/Completed pair, and its text deltas, whether or not anyone reads the stream."""

from __future__ import annotations

import pytest

from lovia import Agent, AgentHooks, RunContext, Runner, tool
from lovia.events import RunEvent, TextDelta, ToolCallCompleted, ToolCallStarted
from lovia.testing import ScriptedProvider, call, text


def receiver_with_hooks() -> tuple[Agent, list[str]]:
    seen: list[str] = []
    hooks = AgentHooks()

    @hooks.on_any
    def record(event: RunEvent, ctx: RunContext[None]) -> None:
        if isinstance(event, ToolCallStarted):
            seen.append(f"started:{event.call.name}:{event.call.id}")
        elif isinstance(event, ToolCallCompleted):
            seen.append(f"completed:{event.call.name}:{event.call.id}")
        elif isinstance(event, TextDelta):
            seen.append(f"delta:{event.delta}")

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        return f"order {order} shipped"

    model = ScriptedProvider(
        [
            call("transfer_to_billing", {}, call_id="h1"),
            call("lookup", {"order": "42"}, call_id="c1"),
            text("Your order shipped."),
        ]
    )
    billing = Agent("billing", model=model, tools=[lookup], hooks=hooks)
    triage = Agent("triage", model=model, handoffs=[billing])  # no hooks of its own
    return triage, seen


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_the_receiving_agents_hooks_see_pairs_and_deltas(streamed: bool) -> None:
    triage, seen = receiver_with_hooks()
    if streamed:
        handle = Runner.stream(triage, "where is my order?")
        async for _ in handle:
            pass
        result = await handle.result()
    else:
        result = await Runner.run(triage, "where is my order?")
    assert result.output == "Your order shipped."
    tool_events = [s for s in seen if not s.startswith("delta:")]
    assert tool_events == ["started:lookup:c1", "completed:lookup:c1"]
    deltas = "".join(s.removeprefix("delta:") for s in seen if s.startswith("delta:"))
    assert deltas == "Your order shipped."
