"""Parallel tools: completion order, event interleaving, and results in completion order."""

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


from lovia import Agent, AgentHooks, Runner, events, tool
from lovia.testing import ScriptedProvider, batch, text

gate = {}


@tool
async def slow(tag: str) -> str:
    """Waits until the fast call has finished."""
    await gate["fast_done"].wait()
    return f"slow {tag}"


@tool
async def fast(tag: str) -> str:
    """Finishes first."""
    return f"fast {tag}"


@check("order")
def _():
    async def main():
        gate["fast_done"] = asyncio.Event()
        hooks = AgentHooks()
        hook_seen = []

        @hooks.on(events.ToolCallCompleted)
        def completed(ev, ctx):
            hook_seen.append(ev.call.id)
            if ev.call.name == "fast":
                gate["fast_done"].set()

        agent = Agent(
            name="a",
            model=ScriptedProvider(
                [batch(("slow", {"tag": "s"}, "s1"), ("fast", {"tag": "f"}, "f1")), text("ok")]
            ),
            tools=[slow, fast],
            hooks=hooks,
        )
        handle = Runner.stream(agent, "go")
        stream_seen = []
        async for ev in handle:
            if isinstance(ev, (events.ToolCallStarted, events.ToolCallCompleted)):
                stream_seen.append([type(ev).__name__, ev.call.id])
        r = await handle
        return {
            "stream": stream_seen,
            "hooks": hook_seen,
            "entries": [
                [e.type, e.call_id] for e in r.entries if e.type in ("tool_call", "tool_result")
            ],
        }

    return main()


print(json.dumps(RESULTS, sort_keys=True))
