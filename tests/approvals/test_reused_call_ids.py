"""Durable approvals when a model turn reuses one call id for two calls that need approval.

``decide`` names calls by id, so a parked run holds one approval per id: the first call
with the id is parked, a later call of the turn with the same id is dropped (its result
tells the model why) instead of being parked. Nothing runs twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    RunBudget,
    Runner,
    SQLiteCheckpointer,
    approvals,
    events,
    tool,
)
from lovia.testing import ScriptedProvider, batch, text
from lovia.transcript import ToolResultEntry


def make_pay(log: list[int]) -> Any:
    @tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        log.append(amount)
        return f"paid {amount}"

    return pay


def twin_turn() -> ScriptedProvider:
    """One turn with two calls that share the id ``c1``, then the final answer."""
    return ScriptedProvider(
        [batch(("pay", {"amount": 1}, "c1"), ("pay", {"amount": 2}, "c1")), text("done")]
    )


async def results(cp: SQLiteCheckpointer, run_id: str) -> list[str]:
    snap = await cp.load(run_id)
    assert snap is not None
    return [e.output for e in snap.entries if isinstance(e, ToolResultEntry)]


@pytest.mark.parametrize("approve", [True, False])
async def test_twin_calls_park_one_approval_that_decides_and_resumes(
    tmp_path: Path, approve: bool
) -> None:
    log: list[int] = []
    model = twin_turn()
    agent = Agent("a", model=model, tools=[make_pay(log)], approval_handler=lambda c, x: "defer")
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    opts = CheckpointOptions(cp, "r1")
    with pytest.raises(ApprovalPending) as info:
        await Runner.run(agent, "go", checkpoint=opts)
    assert [(c.id, c.arguments) for c in info.value.calls] == [("c1", '{"amount": 1}')]
    assert [(p.call_id, p.arguments) for p in info.value.pending] == [("c1", '{"amount": 1}')]
    waiting = await approvals.pending(cp, "r1")
    assert [(c.id, json.loads(c.arguments)) for c in waiting] == [("c1", {"amount": 1})]
    (dropped,) = await results(cp, "r1")
    assert "not run" in dropped and "'c1'" in dropped
    assert log == []

    await approvals.decide(cp, "r1", {"c1": approve})
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "done"
    assert log == ([1] if approve else [])
    outputs = await results(cp, "r1")
    assert len(outputs) == 2 and outputs[0] == dropped
    assert outputs[1] == ("paid 1" if approve else "Tool pay was not approved.")
    assert await approvals.pending(cp, "r1") == []

    again = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))  # a replay
    assert again.output == "done" and log == ([1] if approve else [])
    assert len(model.calls) == 2  # the parked turn and the final answer, nothing more


async def test_the_twin_of_a_parked_call_is_dropped_unasked(tmp_path: Path) -> None:
    log: list[int] = []
    asked: list[int] = []

    def handler(c: Any, ctx: Any) -> Any:
        amount = json.loads(c.arguments)["amount"]
        asked.append(amount)
        return "defer" if amount == 1 else True

    agent = Agent("a", model=twin_turn(), tools=[make_pay(log)], approval_handler=handler)
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    with pytest.raises(ApprovalPending):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r2"))
    assert asked == [1] and log == []  # nobody is asked about a call that cannot be decided
    assert [c.arguments for c in await approvals.pending(cp, "r2")] == ['{"amount": 1}']
    await approvals.decide(cp, "r2", {"c1": True})
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r2"))
    assert result.output == "done" and log == [1]
    dropped, paid = await results(cp, "r2")
    assert "not run" in dropped and paid == "paid 1"


async def test_a_twin_deferred_after_the_first_ran_is_dropped_not_parked(tmp_path: Path) -> None:
    log: list[int] = []
    agent = Agent(
        "a",
        model=twin_turn(),
        tools=[make_pay(log)],
        approval_handler=lambda c, x: True if json.loads(c.arguments)["amount"] == 1 else "defer",
    )
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r3"))
    assert result.output == "done" and log == [1]
    dropped, paid = await results(cp, "r3")
    assert "not run" in dropped and paid == "paid 1"


async def test_twins_deferred_from_the_stream_park_one(tmp_path: Path) -> None:
    log: list[int] = []
    agent = Agent("a", model=twin_turn(), tools=[make_pay(log)])
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    asked: list[str] = []
    handle = Runner.stream(agent, "go", checkpoint=CheckpointOptions(cp, "r4"))
    async for event in handle:
        if isinstance(event, events.ApprovalRequired):
            asked.append(event.call.arguments)
            event.defer()
    with pytest.raises(ApprovalPending):
        await handle.result()
    assert asked == ['{"amount": 1}']
    assert [c.arguments for c in await approvals.pending(cp, "r4")] == ['{"amount": 1}']


async def test_parked_twins_count_once_in_the_budget_across_resumes(tmp_path: Path) -> None:
    log: list[int] = []
    agent = Agent(
        "a", model=twin_turn(), tools=[make_pay(log)], approval_handler=lambda c, x: "defer"
    )
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    for _ in range(3):  # still undecided: each resume parks it again
        budget = RunBudget(max_tool_calls=2)
        with pytest.raises(ApprovalPending):
            await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r5"), budget=budget)
        assert budget.tool_calls == 2
    await approvals.decide(cp, "r5", {"c1": True})
    budget = RunBudget(max_tool_calls=2)
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r5"), budget=budget)
    assert result.output == "done" and log == [1] and budget.tool_calls == 2
