"""Two forks of a run into one new run id at the same moment, on every backend (issue 33): one
writes its fork, the other is refused with ``ForkTargetTaken``, and the stored fork is the
winner's, whole (never both appended into one run)."""

from __future__ import annotations

import asyncio
from typing import Any

from lovia import Agent, CheckpointOptions, Runner, tool
from lovia.stores.fork import ForkTargetTaken
from lovia.testing import ScriptedProvider, call, text

from .backends import checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name


async def _run(cp: Any) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedProvider(
        [call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4}), text("done")]
    )
    agent = Agent(name="calc", model=model, tools=[add])
    await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))


async def test_two_forks_into_one_new_run_id_one_wins_whole(checkpointer: Any) -> None:
    await _run(checkpointer)
    for attempt in range(4):
        new = f"twin-{attempt}"
        results = await asyncio.gather(
            checkpointer.fork("r1", new, at_turn=1),
            checkpointer.fork("r1", new, at_turn=2),
            return_exceptions=True,
        )
        won = [r for r in results if not isinstance(r, BaseException)]
        lost = [r for r in results if isinstance(r, BaseException)]
        assert len(won) == 1 and len(lost) == 1, results
        assert isinstance(lost[0], ForkTargetTaken), lost[0]
        stored = await checkpointer.load(new)
        assert stored is not None
        assert stored.entries == won[0].entries  # one fork, whole: not both appended
        assert stored.turns == won[0].turns
    # the lease a fork held is given back: a fork into a free id goes on at once
    free = await checkpointer.fork("r1", "after", at_turn=1)
    assert (await checkpointer.load("after")).turns == free.turns == 1
