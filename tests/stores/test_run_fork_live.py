"""Forking a run another task is driving (issue 33, C-fork consistency): every fork taken while
the run saves its steps holds whole saved steps, a prefix of what the run finally stored, and
resumes to an answer; the driven run ends as it would have without the forks. On every
backend."""

from __future__ import annotations

import asyncio
from typing import Any

from lovia import Agent, CheckpointOptions, Runner, UserError, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import ToolCallEntry, ToolResultEntry

from .backends import checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name

TURNS = 12


def _agent(model: ScriptedProvider, gate: asyncio.Event | None = None) -> Agent:
    @tool
    async def step(n: int) -> int:
        """One step of work."""
        await asyncio.sleep(0)  # let the forks in between the run's saves
        if gate is not None and n == TURNS // 2:
            await gate.wait()  # parked inside a tool, its call saved, its result not yet
        return n

    return Agent(name="worker", model=model, tools=[step])


def _script() -> list[Any]:
    return [call("step", {"n": n}) for n in range(TURNS)] + [text("finished")]


def _whole_steps(entries: list[Any]) -> bool:
    calls = {e.call_id for e in entries if isinstance(e, ToolCallEntry)}
    results = {e.call_id for e in entries if isinstance(e, ToolResultEntry)}
    return results <= calls


async def test_forks_of_a_driven_run_hold_whole_saved_steps(checkpointer: Any) -> None:
    gate = asyncio.Event()
    driving = asyncio.create_task(
        Runner.run(
            _agent(ScriptedProvider(_script()), gate),
            "go",
            checkpoint=CheckpointOptions(checkpointer, "live"),
        )
    )
    forks: list[tuple[str, Any]] = []
    n = 0
    while not driving.done():
        head = await checkpointer.load("live")
        if head is not None and head.turns > 0:
            name = f"fork{n}"
            try:
                forks.append((name, await checkpointer.fork("live", name, at_turn=head.turns)))
                n += 1
            except UserError:
                pass  # the run moved on between the load and the fork: a refusal writes nothing
        if n >= 4 and not gate.is_set():
            gate.set()  # forks were taken while the run was parked in a tool; let it finish
        await asyncio.sleep(0)
        if n > 40:
            gate.set()
    result = await driving
    assert result.output == "finished"
    assert len(forks) >= 4
    final = [e.model_dump(mode="json") for e in (await checkpointer.load("live")).entries]
    for name, snap in forks:
        taken = [e.model_dump(mode="json") for e in snap.entries]
        assert taken == final[: len(taken)], f"{name} is not a prefix of the run"
        assert _whole_steps(snap.entries), f"{name} holds a result without its call"
        stored = await checkpointer.load(name)
        assert stored is not None and [e.model_dump(mode="json") for e in stored.entries] == taken
    # a fork resumes to an answer, asking the model only for the turns after its fork point
    name, snap = min(forks, key=lambda f: f[1].turns)  # one taken mid-run
    left = TURNS - snap.turns
    model = ScriptedProvider([call("step", {"n": k}) for k in range(left)] + [text("forked")])
    resumed = await Runner.run(_agent(model), [], checkpoint=CheckpointOptions(checkpointer, name))
    assert resumed.output == "forked"
    assert len(model.calls) <= left + 1
