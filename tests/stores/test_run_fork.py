"""Forking a checkpointed run at a step, on every backend (issue 33): the resumed fork asks
the model only from the turn after its fork point and re-runs no tool before it; edits at the
fork point are what it continues from; the source run is untouched and still replays."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, Runner, UserError, tool
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import ToolResultEntry

from .backends import checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name


def _agent(model: ScriptedProvider, ran: list[tuple[int, int]]) -> Agent:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    return Agent(name="calc", model=model, tools=[add])


async def _three_turns(cp: Any) -> list[tuple[int, int]]:
    """Run "r1": two turns that call ``add`` and a third that answers; the tools it ran."""
    ran: list[tuple[int, int]] = []
    model = ScriptedProvider(
        [call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4}), text("done")]
    )
    result = await Runner.run(_agent(model, ran), "go", checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "done"
    return ran


async def test_a_resumed_fork_asks_the_model_only_after_its_fork_point(checkpointer: Any) -> None:
    assert await _three_turns(checkpointer) == [(1, 2), (3, 4)]
    before = (await checkpointer.load("r1")).to_dict()

    fork = await checkpointer.fork("r1", "f1", at_turn=1)
    assert fork.status == "interrupted" and fork.turns == 1
    assert [type(e).__name__ for e in fork.entries] == [
        "InputEntry",
        "ToolCallEntry",
        "ToolResultEntry",
    ]

    ran: list[tuple[int, int]] = []
    model = ScriptedProvider([call("add", {"a": 5, "b": 6}), text("forked")])
    result = await Runner.run(
        _agent(model, ran), [], checkpoint=CheckpointOptions(checkpointer, "f1")
    )
    assert result.output == "forked"
    assert len(model.calls) == 2  # turns 2 and 3 only: turn 1 is not asked again
    assert ran == [(5, 6)]  # the tool of turn 1 did not run again
    assert model.calls[0][-1].content == "3"  # the fork continues from turn 1's result
    assert (await checkpointer.load("f1")).turns == 3

    # the source is untouched and still replays, asking no model and running no tool
    assert (await checkpointer.load("r1")).to_dict() == before
    replay_model = ScriptedProvider([])
    again: list[tuple[int, int]] = []
    replayed = await Runner.run(
        _agent(replay_model, again), [], checkpoint=CheckpointOptions(checkpointer, "r1")
    )
    assert replayed.output == "done" and replay_model.calls == [] and again == []


async def test_a_fork_at_turn_zero_with_a_new_input_asks_again(checkpointer: Any) -> None:
    await _three_turns(checkpointer)
    fork = await checkpointer.fork("r1", "f0", at_turn=0, user_input="say hi")
    assert len(fork.entries) == 1 and fork.turns == 0

    ran: list[tuple[int, int]] = []
    model = ScriptedProvider([text("hi")])
    result = await Runner.run(
        _agent(model, ran), [], checkpoint=CheckpointOptions(checkpointer, "f0")
    )
    assert result.output == "hi" and ran == []
    assert model.calls[0][-1].content == "say hi"


async def test_a_fork_with_an_edited_tool_result_continues_from_it(checkpointer: Any) -> None:
    await _three_turns(checkpointer)
    await checkpointer.fork("r1", "f2", at_turn=2, tool_results={"call_add": "70"})

    ran: list[tuple[int, int]] = []
    model = ScriptedProvider([text("it is 70")])
    result = await Runner.run(
        _agent(model, ran), [], checkpoint=CheckpointOptions(checkpointer, "f2")
    )
    assert result.output == "it is 70" and ran == []
    assert len(model.calls) == 1
    assert model.calls[0][-1].content == "70"  # the edited result, not the tool's 7
    stored = [e for e in (await checkpointer.load("r1")).entries if isinstance(e, ToolResultEntry)]
    assert [e.output for e in stored] == ["3", "7"]  # the source keeps what the tool said


async def test_a_fork_before_a_call_runs_that_call_and_the_later_ones(checkpointer: Any) -> None:
    ran: list[tuple[int, int]] = []
    model = ScriptedProvider(
        [batch(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})), text("ok")]
    )
    await Runner.run(_agent(model, ran), "go", checkpoint=CheckpointOptions(checkpointer, "r2"))
    assert sorted(ran) == [(1, 2), (3, 4)]
    first, second = [e.call_id for e in (await checkpointer.load("r2")).entries[1:3]]

    fork = await checkpointer.fork("r2", "f3", at_turn=1, before_call=second)
    assert [getattr(e, "call_id", None) for e in fork.entries[1:]] == [first, second, first]

    ran.clear()
    model = ScriptedProvider([text("again")])
    result = await Runner.run(
        _agent(model, ran), [], checkpoint=CheckpointOptions(checkpointer, "f3")
    )
    assert result.output == "again"
    assert ran == [(3, 4)]  # only the call at the fork point and after it ran
    assert len(model.calls) == 1


async def test_a_fork_that_drops_a_call_never_runs_it(checkpointer: Any) -> None:
    ran: list[tuple[int, int]] = []
    model = ScriptedProvider(
        [batch(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})), text("ok")]
    )
    await Runner.run(_agent(model, ran), "go", checkpoint=CheckpointOptions(checkpointer, "r3"))
    first, second = [e.call_id for e in (await checkpointer.load("r3")).entries[1:3]]

    fork = await checkpointer.fork("r3", "f4", at_turn=1, drop_calls=[second])
    assert second not in {getattr(e, "call_id", None) for e in fork.entries}

    ran.clear()
    model = ScriptedProvider([text("one")])
    await Runner.run(_agent(model, ran), [], checkpoint=CheckpointOptions(checkpointer, "f4"))
    assert ran == [] and len(model.calls) == 1
    assert [m.tool_call_id for m in model.calls[0] if m.role == "tool"] == [first]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"run_id": "nope", "new_run_id": "f", "at_turn": 1}, "no run 'nope'"),
        ({"run_id": "r1", "new_run_id": "r1", "at_turn": 1}, "a run id of its own"),
        ({"run_id": "r1", "new_run_id": "f", "at_turn": 3}, "cannot be forked after turn 3"),
        ({"run_id": "r1", "new_run_id": "f", "at_turn": -1}, "0 or more"),
        ({"run_id": "r1", "new_run_id": "f", "at_turn": 1, "before_call": "x"}, "no call 'x'"),
        ({"run_id": "r1", "new_run_id": "f", "at_turn": 1, "drop_calls": ["x"]}, "no call 'x'"),
        ({"run_id": "r1", "new_run_id": "f", "at_turn": 1, "before": "x"}, "no option 'before'"),
    ],
)
async def test_a_refused_fork_writes_nothing(
    checkpointer: Any, args: dict[str, Any], words: str
) -> None:
    await _three_turns(checkpointer)
    before = (await checkpointer.load("r1")).to_dict()
    with pytest.raises(UserError, match=words) as caught:
        await checkpointer.fork(**args)
    assert caught.value.hint
    assert await checkpointer.load("f") is None
    assert (await checkpointer.load("r1")).to_dict() == before


async def test_a_fork_never_overwrites_a_run(checkpointer: Any) -> None:
    await _three_turns(checkpointer)
    await checkpointer.fork("r1", "f1", at_turn=1)
    stored = (await checkpointer.load("f1")).to_dict()
    with pytest.raises(UserError, match="exists already"):
        await checkpointer.fork("r1", "f1", at_turn=0)
    assert (await checkpointer.load("f1")).to_dict() == stored
