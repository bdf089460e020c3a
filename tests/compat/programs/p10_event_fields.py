"""Event fields a UI reads: agents, turns, calls, results, entries."""

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


from lovia import Agent, Runner, events, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@check("fields")
def _():
    async def main():
        agent = Agent(
            name="calc",
            model=ScriptedProvider([call("add", {"a": 1, "b": 2}, call_id="c1"), text("3")]),
            tools=[add],
        )
        out = []
        async for ev in Runner.stream(agent, "go"):
            match ev:
                case events.RunStarted():
                    out.append(
                        ["RunStarted", type(ev.agent).__name__, ev.agent.name, ev.agent is agent]
                    )
                case events.TurnStarted() | events.TurnEnded():
                    out.append([type(ev).__name__, type(ev.agent).__name__, ev.agent.name, ev.turn])
                case events.ToolCallStarted(call=c):
                    out.append(["ToolCallStarted", type(c).__name__, c.id, c.name, c.arguments])
                case events.ToolCallCompleted(call=c):
                    out.append(
                        ["ToolCallCompleted", c.id, c.name, ev.result, ev.output, ev.is_error]
                    )
                case events.MessageCompleted(entries=es):
                    out.append(["MessageCompleted", [type(e).__name__ for e in es]])
                case events.RunCompleted(result=r):
                    out.append(["RunCompleted", r.output, r.turns])
        return out

    return main()


print(json.dumps(RESULTS, sort_keys=True))
