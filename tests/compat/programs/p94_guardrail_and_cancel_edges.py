"""Input guardrail trips under a checkpoint; cancels when a tool call starts and while it runs."""

# ruff: noqa: E402
import asyncio
import json
import sys
import traceback

RESULTS: dict = {}


def check(name):
    """Record what ``fn`` returns (or which exception it raised) under ``name``."""

    def record(fn):
        try:
            value = fn()
            if asyncio.iscoroutine(value):
                value = asyncio.run(value)
            json.dumps(value)
        except Exception as exc:
            print(f"--- {name}:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            value = {"raised": type(exc).__name__}
        RESULTS[name] = value
        return fn

    return record


import time

from lovia import (
    Agent,
    AgentHooks,
    CancelToken,
    CheckpointOptions,
    GuardrailTripped,
    InMemoryCheckpointer,
    InMemorySession,
    RunCancelled,
    Runner,
    events,
    tool,
)
from lovia.testing import ScriptedProvider, batch, call, text

RAN: list = []


@tool
async def work(x: int) -> str:
    """Work."""
    RAN.append(x)
    await asyncio.sleep(0.3)
    return f"w{x}"


@tool
def sync_work(x: int) -> str:
    """Work on a thread."""
    RAN.append(x)
    time.sleep(0.3)
    return f"s{x}"


def _kinds(entries):
    return [e.type + (":" + e.output if e.type == "tool_result" else "") for e in entries]


@check("input_guardrail_trip")
def _():
    async def main():
        seen = []

        def guard(messages, ctx):
            seen.append([m.content for m in messages])
            return "no" if len(seen) == 1 else None

        cp, s = InMemoryCheckpointer(), InMemorySession()
        p = ScriptedProvider([text("hi")])
        a = Agent(name="bot", model=p, input_guardrails=[guard])
        opts = CheckpointOptions(cp, "r1")
        try:
            await Runner.run(a, "hello", session=s, session_id="u", checkpoint=opts)
        except GuardrailTripped:
            pass
        snap = await cp.load("r1")
        first = [snap.status, _kinds(snap.entries), len(await s.load("u"))]
        r = await Runner.run(a, "other", session=s, session_id="u", checkpoint=opts)
        prompt = [m.content for m in p.calls[0]]
        return [first, r.output, prompt, seen]

    return main()


def _cancel_at_start(script, *, stream):
    async def main():
        RAN.clear()
        cp = InMemoryCheckpointer()
        hooks = AgentHooks()
        if not stream:
            stopped = []

            @hooks.on(events.ToolCallStarted)
            def stop(event, ctx):
                if not stopped:  # the first run only
                    stopped.append(True)
                    ctx.cancel_token.cancel("stop")

        a = Agent(
            name="bot",
            model=ScriptedProvider([*script, text("done")]),
            tools=[work, sync_work],
            hooks=hooks,
        )
        handle = Runner.stream(a, "go", checkpoint=CheckpointOptions(cp, "r"))
        async for ev in handle:
            if stream and isinstance(ev, events.ToolCallStarted):
                handle.cancel("stop")
        try:
            await handle.result()
            out = "completed"
        except RunCancelled:
            out = "RunCancelled"
        snap = await cp.load("r")
        first = [out, sorted(RAN), snap.status, _kinds(snap.entries)]
        RAN.clear()
        r = await Runner.run(a, "go", checkpoint=CheckpointOptions(cp, "r"))
        return [first, r.output, sorted(RAN)]

    return main()


@check("cancel_on_tool_call_started")
def _():
    return _cancel_at_start([call("work", {"x": 1})], stream=True)


@check("cancel_on_tool_call_started_batch")
def _():
    script = [batch(("work", {"x": 1}, "c1"), ("work", {"x": 2}, "c2"))]
    return _cancel_at_start(script, stream=True)


@check("cancel_in_tool_call_started_hook")
def _():
    return _cancel_at_start([call("sync_work", {"x": 1})], stream=False)


def _cancel_while_running(name):
    async def main():
        RAN.clear()
        token = CancelToken()
        cp = InMemoryCheckpointer()
        a = Agent(
            name="bot",
            model=ScriptedProvider([call(name, {"x": 1}), text("done")]),
            tools=[work, sync_work],
        )

        async def stop_when_started():
            while not RAN:  # noqa: ASYNC110 - a sync tool appends on its thread
                await asyncio.sleep(0.01)
            token.cancel("stop")

        stopper = asyncio.ensure_future(stop_when_started())
        try:
            await Runner.run(a, "go", cancel_token=token, checkpoint=CheckpointOptions(cp, "r"))
            out = "completed"
        except RunCancelled:
            out = "RunCancelled"
        await stopper
        snap = await cp.load("r")
        return [out, snap.status, _kinds(snap.entries)]

    return main()


@check("cancel_while_async_tool_runs")
def _():
    return _cancel_while_running("work")


@check("cancel_while_sync_tool_runs")
def _():
    return _cancel_while_running("sync_work")


print(json.dumps(RESULTS, sort_keys=True))
