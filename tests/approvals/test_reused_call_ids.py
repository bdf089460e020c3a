"""Durable approvals when a model turn reuses one call id for two calls that need approval.

A run gives the later call an id of its own (``c1_2``) before the turn is saved, so each twin
is parked, asked about and decided by its own id. A turn stored before that (both calls under
one id) still never parks a call ``decide`` cannot name: the first call with the id is
parked, a later one is dropped (its result tells the model why). Nothing runs twice.
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
    InputEntry,
    RunBudget,
    Runner,
    RunSnapshot,
    SQLiteCheckpointer,
    ToolCallEntry,
    approvals,
    events,
    tool,
)
from lovia.testing import ScriptedProvider, batch, text
from lovia.transcript import ToolResultEntry


def make_pay(log: list[int]) -> Any:
    @tool(needs_approval=True)
    async def pay(amount: int) -> str:  # async: twins run in call order (threads: any order)
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
async def test_twin_calls_park_under_ids_of_their_own_and_are_decided_apart(
    tmp_path: Path, approve: bool
) -> None:
    log: list[int] = []
    model = twin_turn()
    agent = Agent("a", model=model, tools=[make_pay(log)], approval_handler=lambda c, x: "defer")
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    opts = CheckpointOptions(cp, "r1")
    with pytest.raises(ApprovalPending) as info:
        await Runner.run(agent, "go", checkpoint=opts)
    both = [("c1", '{"amount": 1}'), ("c1_2", '{"amount": 2}')]
    assert [(c.id, c.arguments) for c in info.value.calls] == both
    assert [(p.call_id, p.arguments) for p in info.value.pending] == both
    waiting = await approvals.pending(cp, "r1")
    assert [(c.id, c.arguments) for c in waiting] == both
    assert await results(cp, "r1") == [] and log == []

    await approvals.decide(cp, "r1", {"c1": approve, "c1_2": not approve})
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "done"
    assert log == ([1] if approve else [2])
    refused = "Tool pay was not approved."
    assert await results(cp, "r1") == [refused, "paid 1" if approve else "paid 2"]
    assert await approvals.pending(cp, "r1") == []

    again = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))  # a replay
    assert again.output == "done" and log == ([1] if approve else [2])
    assert len(model.calls) == 2  # the parked turn and the final answer, nothing more


async def test_a_twin_allowed_at_once_runs_while_the_other_waits(tmp_path: Path) -> None:
    log: list[int] = []
    asked: list[str] = []

    def handler(c: Any, ctx: Any) -> Any:
        asked.append(c.id)
        return "defer" if json.loads(c.arguments)["amount"] == 1 else True

    agent = Agent("a", model=twin_turn(), tools=[make_pay(log)], approval_handler=handler)
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    with pytest.raises(ApprovalPending):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r2"))
    assert asked == ["c1", "c1_2"] and log == [2]
    assert [c.id for c in await approvals.pending(cp, "r2")] == ["c1"]
    await approvals.decide(cp, "r2", {"c1": True})
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r2"))
    assert result.output == "done" and log == [2, 1]
    assert await results(cp, "r2") == ["paid 2", "paid 1"]


async def test_twins_deferred_from_the_stream_park_both(tmp_path: Path) -> None:
    log: list[int] = []
    agent = Agent("a", model=twin_turn(), tools=[make_pay(log)])
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    asked: list[str] = []
    handle = Runner.stream(agent, "go", checkpoint=CheckpointOptions(cp, "r4"))
    async for event in handle:
        if isinstance(event, events.ApprovalRequired):
            asked.append(event.call.id)
            event.defer()
    with pytest.raises(ApprovalPending):
        await handle.result()
    assert asked == ["c1", "c1_2"]
    assert [c.id for c in await approvals.pending(cp, "r4")] == ["c1", "c1_2"]


async def test_parked_twins_count_once_each_in_the_budget_across_resumes(tmp_path: Path) -> None:
    log: list[int] = []
    agent = Agent(
        "a", model=twin_turn(), tools=[make_pay(log)], approval_handler=lambda c, x: "defer"
    )
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    for _ in range(3):  # still undecided: each resume parks them again
        budget = RunBudget(max_tool_calls=2)
        with pytest.raises(ApprovalPending):
            await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r5"), budget=budget)
        assert budget.tool_calls == 2
    await approvals.decide(cp, "r5", {"c1": True, "c1_2": True})
    budget = RunBudget(max_tool_calls=2)
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r5"), budget=budget)
    assert result.output == "done" and log == [1, 2] and budget.tool_calls == 2


async def stored_twins(cp: SQLiteCheckpointer, run_id: str) -> None:
    """A run stopped right after a turn saved before repeated ids got ids of their own."""
    twins = [
        ToolCallEntry(call_id="c1", name="pay", arguments='{"amount": 1}'),
        ToolCallEntry(call_id="c1", name="pay", arguments='{"amount": 2}'),
    ]
    snap = RunSnapshot(
        run_id, "a", [InputEntry(role="user", content="go"), *twins], turns=1, status="failed"
    )
    await cp.append(run_id, snap.entries, snap.head)


@pytest.mark.parametrize("approve", [True, False])
async def test_stored_twins_park_the_first_and_drop_the_other(
    tmp_path: Path, approve: bool
) -> None:
    log: list[int] = []
    model = ScriptedProvider([text("done")])
    agent = Agent("a", model=model, tools=[make_pay(log)], approval_handler=lambda c, x: "defer")
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    await stored_twins(cp, "r6")
    with pytest.raises(ApprovalPending) as info:
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r6"))
    assert [(c.id, c.arguments) for c in info.value.calls] == [("c1", '{"amount": 1}')]
    assert [(c.id, c.arguments) for c in await approvals.pending(cp, "r6")] == [
        ("c1", '{"amount": 1}')
    ]
    (dropped,) = await results(cp, "r6")
    assert "not run" in dropped and "'c1'" in dropped and log == []
    await approvals.decide(cp, "r6", {"c1": approve})
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r6"))
    assert result.output == "done" and log == ([1] if approve else [])
    assert await results(cp, "r6") == [
        dropped,
        "paid 1" if approve else "Tool pay was not approved.",
    ]
    assert await approvals.pending(cp, "r6") == []


async def test_a_stored_twin_deferred_after_the_first_ran_is_dropped_not_parked(
    tmp_path: Path,
) -> None:
    log: list[int] = []
    agent = Agent(
        "a",
        model=ScriptedProvider([text("done")]),
        tools=[make_pay(log)],
        approval_handler=lambda c, x: True if json.loads(c.arguments)["amount"] == 1 else "defer",
    )
    cp = SQLiteCheckpointer(tmp_path / "runs.db")
    await stored_twins(cp, "r3")
    result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r3"))
    assert result.output == "done" and log == [1]
    dropped, paid = await results(cp, "r3")
    assert paid == "paid 1" and "not run" in dropped
