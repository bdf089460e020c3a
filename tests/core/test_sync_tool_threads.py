"""Sync tools run on worker threads: never on the event loop's thread, in a copy of the
caller's context; a cancelled run waits only a short grace for one, then abandons it
(tests/core/test_cancel_during_sync_tool.py: what the grace keeps)."""

from __future__ import annotations

import asyncio
import contextvars
import os
import subprocess
import sys
import threading
from typing import Any

import pytest

from lovia import CancelToken, RunCancelled, Runner, ToolResultEntry, tool
from lovia.testing import batch, call, text

from .helpers import agent_with

REQUEST = contextvars.ContextVar("REQUEST", default="unset")


def outputs(entries: list[object]) -> dict[str, str]:
    return {e.call_id: e.output for e in entries if isinstance(e, ToolResultEntry)}


async def test_a_sync_tool_runs_off_the_loop_thread_and_sees_the_callers_context() -> None:
    loop_thread = threading.get_ident()
    seen: list[tuple[int, str]] = []

    @tool
    def where() -> str:
        seen.append((threading.get_ident(), REQUEST.get()))
        REQUEST.set("changed in the tool")  # its own copy: the caller's value stays
        return "ok"

    REQUEST.set("req-7")
    script = [call("where"), call("where", call_id="again"), text("done")]
    agent, _ = agent_with(script, tools=[where])
    result = await Runner.run(agent, "x")
    assert result.output == "done"
    assert [s[1] for s in seen] == ["req-7", "req-7"]
    assert all(thread != loop_thread for thread, _ in seen)
    assert REQUEST.get() == "req-7"


async def test_a_blocking_sync_tool_leaves_the_loop_free() -> None:
    loop = asyncio.get_running_loop()
    release = threading.Event()
    started = asyncio.Event()

    @tool
    def wait_for_release() -> str:
        loop.call_soon_threadsafe(started.set)  # only a free loop can act on this
        return "released" if release.wait(30) else "the loop was frozen"

    async def releaser() -> None:
        await started.wait()
        release.set()

    agent, _ = agent_with([call("wait_for_release"), text("done")], tools=[wait_for_release])
    result, _ = await asyncio.gather(Runner.run(agent, "x"), releaser())
    assert outputs(result.entries) == {"call_wait_for_release": "released"}


async def test_cancel_during_a_blocking_sync_tool_stops_the_run_without_waiting_for_it() -> None:
    loop = asyncio.get_running_loop()
    release = threading.Event()
    started = asyncio.Event()
    finished = threading.Event()

    @tool
    def stuck() -> str:
        loop.call_soon_threadsafe(started.set)
        release.wait(30)
        finished.set()
        return "late"

    token = CancelToken()
    agent, model = agent_with([call("stuck"), text("never")], tools=[stuck])
    run = asyncio.ensure_future(Runner.run(agent, "x", cancel_token=token))
    await started.wait()
    token.cancel("stop")
    try:
        with pytest.raises(RunCancelled, match="stop"):
            await run  # after the grace for sync tools: the tool blocks far longer than that
        assert not finished.is_set()  # the run ended while its tool was still blocked
        assert len(model.calls) == 1
    finally:
        release.set()
    assert await asyncio.to_thread(finished.wait, 30)  # the abandoned call ends on its thread


async def test_parallel_sync_calls_each_get_a_thread() -> None:
    arrived = threading.Barrier(3, timeout=30)  # all three must run at the same time

    @tool
    def meet(n: int) -> str:
        arrived.wait()
        return f"met {n}"

    script = [batch(("meet", {"n": 1}, "a"), ("meet", {"n": 2}, "b"), ("meet", {"n": 3}, "c"))]
    agent, _ = agent_with([*script, text("done")], tools=[meet])
    result = await Runner.run(agent, "x")
    assert outputs(result.entries) == {"a": "met 1", "b": "met 2", "c": "met 3"}


async def test_what_a_sync_tool_raises_reaches_the_model_as_an_error_result() -> None:
    @tool
    def stop_iteration() -> str:
        raise StopIteration  # cannot travel through a future as it is

    @tool
    def key_error() -> str:
        raise KeyError("missing")

    script = [batch(("stop_iteration", {}, "s"), ("key_error", {}, "k")), text("done")]
    agent, _ = agent_with(script, tools=[stop_iteration, key_error])
    result = await asyncio.wait_for(Runner.run(agent, "x"), 60)  # it once hung the run
    got = {e.call_id: e for e in result.entries if isinstance(e, ToolResultEntry)}
    assert got["s"].is_error and got["k"].is_error and "missing" in got["k"].output
    assert result.output == "done"


async def test_a_sync_tool_may_return_an_exception_object_as_its_value() -> None:
    @tool
    def describe() -> object:
        return ValueError("a value, not a failure")

    agent, _ = agent_with([call("describe"), text("done")], tools=[describe])
    result = await Runner.run(agent, "x")
    got = outputs(result.entries)
    assert "a value, not a failure" in got["call_describe"]
    assert not [e for e in result.entries if isinstance(e, ToolResultEntry) and e.is_error]


async def test_a_sync_tool_past_its_timeout_is_an_error_and_the_run_goes_on() -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def stuck() -> str:
        release.wait(30)
        return "late"

    agent, _ = agent_with([call("stuck"), text("gave up")], tools=[stuck])
    try:
        result = await asyncio.wait_for(Runner.run(agent, "x"), 30)
    finally:
        release.set()
    got = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert got[0].is_error and "timed out" in got[0].output
    assert result.output == "gave up"


async def test_sync_calls_awaited_together_in_a_policy_each_give_their_own_result() -> None:
    async def twice(invoke: Any, args: dict[str, Any], ctx: Any) -> str:
        first, second = await asyncio.gather(invoke(dict(args), ctx), invoke(dict(args), ctx))
        return f"{first}+{second}"

    @tool(policies=[twice])
    def where() -> str:
        return "thread" if threading.current_thread() is not threading.main_thread() else "loop"

    agent, _ = agent_with([call("where"), text("done")], tools=[where])
    result = await Runner.run(agent, "x")
    assert outputs(result.entries) == {"call_where": "thread+thread"}


async def test_sync_tools_that_run_whole_runs_of_their_own_do_not_starve_each_other() -> None:
    # more outer calls than any loop's share of threads: each waits for its inner run's tool

    @tool
    def inner(n: int) -> str:
        return f"inner {n}"

    @tool
    def outer(n: int) -> str:
        agent, _ = agent_with([call("inner", {"n": n}), text(f"done {n}")], tools=[inner])
        return str(Runner.run_sync(agent, "x").output)

    calls = [("outer", {"n": n}, f"c{n}") for n in range(34)]
    agent, _ = agent_with([batch(*calls), text("all done")], tools=[outer])
    result = await asyncio.wait_for(Runner.run(agent, "x"), 120)  # a starved pool hangs
    assert outputs(result.entries) == {f"c{n}": f"done {n}" for n in range(34)}


_FORK_AND_EXIT = """
import os, sys
from lovia import Runner, tool
from lovia.testing import ScriptedProvider, call, text
from lovia import Agent

@tool
def pid() -> str:
    return str(os.getpid())

def run(tag: str) -> str:
    model = ScriptedProvider([call("pid"), text(tag)])
    result = Runner.run_sync(Agent("a", model=model, tools=[pid]), "x")
    outputs = [e.output for e in result.entries if type(e).__name__ == "ToolResultEntry"]
    assert outputs == [str(os.getpid())], outputs
    return str(result.output)

assert run("parent") == "parent"  # the parent's pool has a thread, idle now
child = os.fork()
if child == 0:
    try:
        ok = run("child") == "child"
    finally:
        os._exit(0 if ok else 3)
_, status = os.waitpid(child, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert run("parent again") == "parent again"
print("ok")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_sync_tools_work_in_a_forked_child_and_an_idle_pool_lets_the_process_exit() -> None:
    # the child gets a pool of its own; at exit the idle threads stop (the timeout: a hang)
    done = subprocess.run(
        [sys.executable, "-c", _FORK_AND_EXIT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
