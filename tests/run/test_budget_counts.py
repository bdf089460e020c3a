"""Budgets across resumes and context policies: each call counts once, and usage a context
policy spends is checked before the model call it prepares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    BudgetExceeded,
    CheckpointOptions,
    RunBudget,
    Runner,
    SQLiteCheckpointer,
    tool,
)
from lovia.context import CompactionRequest, ContextResult
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.usage import Usage


def make_ping(log: list[int]) -> Any:
    @tool
    def ping(n: int) -> str:
        """Answer a ping."""
        log.append(n)
        return f"pong {n}"

    return ping


class SpendingPolicy:
    """A context policy whose own model call (a summary, say) costs tokens."""

    async def compact(self, req: CompactionRequest) -> ContextResult:
        req.usage.add(Usage(input_tokens=100, output_tokens=50))
        return ContextResult(entries=list(req.entries))


async def test_policy_spend_over_the_budget_stops_before_the_model_call() -> None:
    model = ScriptedProvider([text("done")])
    agent = Agent("a", model=model, context_policy=SpendingPolicy())
    with pytest.raises(BudgetExceeded):
        await Runner.run(agent, "hi", budget=RunBudget(max_total_tokens=100))
    assert model.calls == []  # the call that would go over was never made


async def test_policy_spend_within_the_budget_lets_the_call_go() -> None:
    model = ScriptedProvider([text("done")])
    agent = Agent("a", model=model, context_policy=SpendingPolicy())
    result = await Runner.run(agent, "hi", budget=RunBudget(max_total_tokens=1000))
    assert result.output == "done" and len(model.calls) == 1


async def stop_on_budget(tmp_path: Path, log: list[int]) -> tuple[Agent, SQLiteCheckpointer]:
    """A turn of two calls under max_tool_calls=1: the first runs, the second trips it."""
    model = ScriptedProvider(
        [batch(("ping", {"n": 1}, "a"), ("ping", {"n": 2}, "b")), text("done")]
    )
    agent = Agent("a", model=model, tools=[make_ping(log)])
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    budget = RunBudget(max_tool_calls=1)
    with pytest.raises(BudgetExceeded):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"), budget=budget)
    assert log == [1] and budget.tool_calls == 2
    return agent, cp


async def test_a_stopped_call_is_not_counted_again_on_each_resume(tmp_path: Path) -> None:
    log: list[int] = []
    agent, cp = await stop_on_budget(tmp_path, log)
    for _ in range(3):  # the same limit again: still over, by the same count
        budget = RunBudget(max_tool_calls=1)
        with pytest.raises(BudgetExceeded, match="tool call count 2 exceeds budget 1"):
            await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"), budget=budget)
        assert budget.tool_calls == 2
    assert log == [1]
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "interrupted"
    assert snap.budget["tool_calls"] == 2


async def test_a_resume_with_room_for_the_calls_asked_for_finishes(tmp_path: Path) -> None:
    log: list[int] = []
    agent, cp = await stop_on_budget(tmp_path, log)
    with pytest.raises(BudgetExceeded):  # a resume under the old limit changes nothing
        await Runner.run(
            agent, "go", checkpoint=CheckpointOptions(cp, "r1"), budget=RunBudget(max_tool_calls=1)
        )
    budget = RunBudget(max_tool_calls=2)  # exactly the two calls the model asked for
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"), budget=budget)
    assert result.output == "done"
    assert log == [1, 2] and budget.tool_calls == 2


async def test_a_parked_over_budget_call_in_a_later_turn_counts_once(tmp_path: Path) -> None:
    """The count carries over resumes: calls of earlier turns stay counted, the stopped one
    is added once."""
    log: list[int] = []
    model = ScriptedProvider(
        [call("ping", {"n": 1}, call_id="a"), call("ping", {"n": 2}, call_id="b"), text("ok")]
    )
    agent = Agent("a", model=model, tools=[make_ping(log)])
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    for limit in (1, 1, 1):
        with pytest.raises(BudgetExceeded, match="tool call count 2 exceeds budget 1"):
            await Runner.run(
                agent,
                "go",
                checkpoint=CheckpointOptions(cp, "r2"),
                budget=RunBudget(max_tool_calls=limit),
            )
    budget = RunBudget(max_tool_calls=2)
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r2"), budget=budget)
    assert result.output == "ok" and log == [1, 2] and budget.tool_calls == 2


async def test_a_handoff_is_a_tool_call_and_is_not_made_over_the_budget(tmp_path: Path) -> None:
    log: list[int] = []
    specialist = Agent(
        "Specialist",
        model=ScriptedProvider([call("ping", {"n": 3}), text("done by specialist")]),
        tools=[make_ping(log)],
    )
    triage = Agent(
        "Triage",
        model=ScriptedProvider(
            [batch(("ping", {"n": 1}, "p"), ("transfer_to_specialist", {}, "h"))]
        ),
        tools=[make_ping(log)],
        handoffs=[specialist],
    )
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    budget = RunBudget(max_tool_calls=1)
    with pytest.raises(BudgetExceeded, match="tool call count 2 exceeds budget 1"):
        await Runner.run(triage, "go", checkpoint=CheckpointOptions(cp, "h1"), budget=budget)
    snap = await cp.load("h1")
    assert snap is not None and snap.agent_name == "Triage"  # the transfer did not happen
    assert log == [1]
    budget = RunBudget(max_tool_calls=3)  # the ping, the transfer, the specialist's ping
    result = await Runner.run(triage, "go", checkpoint=CheckpointOptions(cp, "h1"), budget=budget)
    assert result.output == "done by specialist" and result.final_agent.name == "Specialist"
    assert log == [1, 3] and budget.tool_calls == 3


async def test_a_sub_agents_policy_spend_counts_in_the_callers_usage() -> None:
    child = Agent(
        "child", model=ScriptedProvider([text("sub answer")]), context_policy=SpendingPolicy()
    )
    ask = child.as_tool()
    parent = Agent(
        "parent",
        model=ScriptedProvider([call(ask.name, {"input": "x"}), text("done")]),
        tools=[ask],
    )
    result = await Runner.run(parent, "go")
    # two parent turns and one child turn at 1 + 1 tokens each, plus the child's summary
    assert (result.usage.input_tokens, result.usage.output_tokens) == (103, 53)
