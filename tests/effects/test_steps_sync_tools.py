"""``ctx.step`` and sync code (issue 32): a sync tool, which runs on a thread, is told to
become ``async def`` instead of getting a coroutine nobody awaits (its effect would silently
never happen); a slow sync function goes through ``asyncio.to_thread`` and is recorded."""

from __future__ import annotations

import asyncio
import threading

from lovia import Agent, RunContext, Runner, tool
from lovia.testing import ScriptedProvider, call, text


async def test_a_sync_tool_that_takes_a_step_fails_saying_to_make_it_async() -> None:
    ran: list[str] = []

    @tool
    def charge(ctx: RunContext[None]) -> str:
        """Charge, through a recorded step (from a sync tool: refused)."""
        ctx.step("charge", ran.append, "charged")
        return "ok"

    agent = Agent("a", model=ScriptedProvider([call("charge"), text("ok")]), tools=[charge])
    result = await Runner.run(agent, "go")
    errors = [str(getattr(e, "output", "")) for e in result.entries if getattr(e, "is_error", 0)]
    assert errors and "sync tool" in errors[0] and "async def" in errors[0], errors
    assert ran == []


async def test_a_slow_sync_function_runs_on_a_thread_through_to_thread() -> None:
    threads: list[str] = []

    def slow(n: int) -> int:
        threads.append(threading.current_thread().name)
        return n * 2

    @tool
    async def double(ctx: RunContext[None], n: int) -> str:
        """Double ``n`` in a recorded step, off the event loop."""
        return str(await ctx.step("double", asyncio.to_thread, slow, n))

    model = ScriptedProvider([call("double", {"n": 21}), text("ok")])
    result = await Runner.run(Agent("a", model=model, tools=[double]), "go")
    assert "42" in [getattr(e, "output", None) for e in result.entries]
    assert threads and threads[0] != threading.main_thread().name
