"""``ctx.step``: a step that completed is not run again when its call runs again (issue 32)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from lovia import Agent, RunContext, Runner, UserError, tool
from lovia.testing import ScriptedProvider, call, text

from .test_idempotency_key import attempt, log_lines


@pytest.mark.parametrize("kill", ["after1", "after2", "step3"])
def test_a_three_step_tool_killed_between_steps_runs_each_step_once(
    tmp_path: Path, kill: str
) -> None:
    first = attempt(tmp_path, "steps", "--kill", kill)
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = attempt(tmp_path, "steps")
    assert second.returncode == 0, second.stderr
    steps = [r["step"] for r in log_lines(tmp_path) if r["kind"] == "step"]
    if kill == "step3":  # killed after step 3's effect, before its record: it runs again
        assert steps == [1, 2, 3, 3]
    else:
        assert steps == [1, 2, 3]
    assert json.loads(second.stdout)["output"] == "done"


async def test_a_step_result_must_be_json() -> None:
    @tool
    async def bad(ctx: RunContext[None]) -> str:
        await ctx.step("s", lambda: {1, 2})
        return "ok"

    agent = Agent("a", model=ScriptedProvider([call("bad"), text("ok")]), tools=[bad])
    result = await Runner.run(agent, "go")
    errors = [e for e in result.entries if getattr(e, "is_error", False)]
    assert errors and "cannot be recorded" in errors[0].output


async def test_steps_take_sync_and_async_functions_and_arguments() -> None:
    async def add(a: int, b: int = 0) -> int:
        return a + b

    @tool
    async def both(ctx: RunContext[None]) -> str:
        x = await ctx.step("sync", lambda a, b: [a, b], 1, b=2)
        y = await ctx.step("async", add, 3, b=4)
        return json.dumps([x, y])

    agent = Agent("a", model=ScriptedProvider([call("both"), text("ok")]), tools=[both])
    result = await Runner.run(agent, "go")
    assert "[[1, 2], 7]" in [getattr(e, "output", None) for e in result.entries]
    with pytest.raises(UserError):
        await RunContext().step("s", lambda: 1)
