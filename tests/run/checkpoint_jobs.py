"""A small job shared by the checkpoint runner tests: an agent whose `stop` tool ends the run
the first time it is called (as a crash or a cancel would), and counts every tool execution."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lovia import Agent, Checkpointer, CheckpointOptions, RunCancelled, RunContext, Runner, tool
from lovia.testing import ScriptedProvider, call, text


@dataclass
class Job:
    """Counts tool executions as (tool name, turn, arguments) in ``executed``."""

    executed: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)
    stops_left: int = 1

    def tools(self) -> list[Any]:
        @tool(parallel=False)
        def step(ctx: RunContext[Any], n: int) -> str:
            """Do step n."""
            self.executed.append(("step", ctx.turn, {"n": n}))
            return f"step {n} done"

        @tool(parallel=False)
        def stop(ctx: RunContext[Any]) -> str:
            """Stop the run once, then succeed."""
            self.executed.append(("stop", ctx.turn, {}))
            if self.stops_left:
                self.stops_left -= 1
                raise RunCancelled("stopped inside the tool")
            return "stop passed"

        return [step, stop]

    def agent(self, script: list[Any], **kwargs: Any) -> tuple[Agent, ScriptedProvider]:
        model = ScriptedProvider(script)
        kwargs.setdefault("name", "worker")
        kwargs.setdefault("tools", self.tools())
        return Agent(model=model, **kwargs), model

    def names(self) -> list[str]:
        return [name for name, _, _ in self.executed]


FIRST_SCRIPT = [call("step", {"n": 1}), call("stop", {})]
"""Turn 1 runs step 1; turn 2 calls stop, which ends the run with the call left dangling."""


async def interrupt(job: Job, cp: Checkpointer, run_id: str, **kwargs: Any) -> None:
    """Leave ``run_id`` interrupted in ``cp``: step 1 has its result, stop is dangling."""
    agent, _ = job.agent(list(FIRST_SCRIPT), **kwargs.pop("agent_kwargs", {}))
    try:
        await Runner.run(agent, "do the job", checkpoint=CheckpointOptions(cp, run_id), **kwargs)
    except RunCancelled:
        return
    raise AssertionError("the first attempt was expected to stop")


RESUME_SCRIPT = [text("all done")]
