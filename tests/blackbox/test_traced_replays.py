"""The `run` span of a replay, as lovia 0.9.119 traced it: `resumed` is true (the stored run
is answered again, not run again) and no run totals are set, since nothing ran."""

from __future__ import annotations

import pytest

from lovia import Agent, CancelToken, CheckpointOptions, InMemoryCheckpointer, RunCancelled, Runner
from lovia.testing import ScriptedProvider, text
from lovia.tracing import InMemoryTracer


async def _traced(cp: InMemoryCheckpointer, run_id: str, answer: str | None, **kw: object) -> dict:
    tracer = InMemoryTracer()
    model = ScriptedProvider([text(answer)] if answer else [])
    options = CheckpointOptions(cp, run_id, **kw)  # type: ignore[arg-type]
    await Runner.run(Agent("a", model=model), "hi", tracer=tracer, checkpoint=options)
    [run] = tracer.named("run")
    return dict(run.attrs)


async def test_fresh_replayed_restarted_and_resumed_runs_are_traced_as_0_9_119_traced_them() -> (
    None
):
    cp = InMemoryCheckpointer()
    totals = {"turns": 1, "total_tokens": 2}
    assert await _traced(cp, "r1", "first") == {
        "agent": "a",
        "run_id": "r1",
        "resumed": False,
        **totals,
    }
    assert await _traced(cp, "r1", None) == {"agent": "a", "run_id": "r1", "resumed": True}
    restarted = await _traced(cp, "r1", "again", if_run_exists="restart")
    assert restarted == {"agent": "a", "run_id": "r1", "resumed": False, **totals}
    stop = CancelToken()
    stop.cancel()
    with pytest.raises(RunCancelled):
        await Runner.run(
            Agent("a", model=ScriptedProvider([])),
            "hi",
            cancel_token=stop,
            checkpoint=CheckpointOptions(cp, "r2"),
        )
    resumed = await _traced(cp, "r2", "done")
    assert resumed == {"agent": "a", "run_id": "r2", "resumed": True, **totals}


async def test_a_detailed_tracer_still_gets_the_totals_of_a_replay() -> None:
    cp = InMemoryCheckpointer()
    await Runner.run(
        Agent("a", model=ScriptedProvider([text("first")])),
        "hi",
        checkpoint=CheckpointOptions(cp, "r1"),
    )
    tracer = InMemoryTracer(detailed=True)
    await Runner.run(
        Agent("a", model=ScriptedProvider([])),
        "hi",
        tracer=tracer,
        checkpoint=CheckpointOptions(cp, "r1"),
    )
    [run] = tracer.named("run")
    assert run.attrs["resumed"] is True and run.attrs["turns"] == 1
