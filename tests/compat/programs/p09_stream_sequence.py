"""Consuming Runner.stream: the event types in order, deltas collapsed."""

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


from lovia import Agent, Runner, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


def collapse(names):
    out = []
    for n in names:
        if out and out[-1][0] == n:
            out[-1][1] += 1
        else:
            out.append([n, 1])
    return out


@check("events")
def _():
    async def main():
        agent = Agent(
            name="calc",
            model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("three")]),
            tools=[add],
        )
        handle = Runner.stream(agent, "1+2?")
        names = [type(ev).__name__ async for ev in handle]
        result = await handle.result()
        return {
            "events": collapse(names),
            "output": result.output,
            "await_again": (await handle).output,
        }

    return main()


@check("text_delta_text")
def _():
    async def main():
        from lovia import events

        agent = Agent(name="bot", model=ScriptedProvider([text("Hi there")]))
        deltas = [
            ev.delta async for ev in Runner.stream(agent, "x") if isinstance(ev, events.TextDelta)
        ]
        return deltas

    return main()


print(json.dumps(RESULTS, sort_keys=True))
