"""Tool failures become results the model reads: exceptions, ToolError, bad arguments."""

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


from lovia import Agent, Runner, ToolError, events, tool
from lovia.testing import ScriptedProvider, batch, text


@tool
def divide(a: int, b: int) -> float:
    """Divide."""
    return a / b


@tool
def charge(amount: int) -> str:
    """Charge."""
    raise ToolError("card declined", hint="ask for another card")


@check("results")
def _():
    async def main():
        agent = Agent(
            name="bot",
            model=ScriptedProvider(
                [
                    batch(
                        ("divide", {"a": 1, "b": 0}, "c1"),
                        ("charge", {"amount": 5}, "c2"),
                        ("divide", {"a": "x"}, "c3"),
                        ("nosuch", {}, "c4"),
                    ),
                    text("sorry"),
                ]
            ),
            tools=[divide, charge],
        )
        completed, started, failed = {}, [], []
        async for ev in Runner.stream(agent, "go"):
            if isinstance(ev, events.ToolCallStarted):
                started.append(ev.call.id)
            elif isinstance(ev, events.ToolCallCompleted):
                completed[ev.call.id] = [
                    ev.is_error,
                    ev.output.startswith("Tool error"),
                    ev.output.split(":")[0],
                ]
            elif type(ev).__name__ == "ToolCallFailed":
                failed.append([ev.call.id if ev.call else None, type(ev.error).__name__])
        return {"completed": completed, "started": sorted(started), "failed": sorted(failed)}

    return main()


@check("zero_division_text")
def _():
    agent = Agent(
        name="bot",
        model=ScriptedProvider([batch(("divide", {"a": 1, "b": 0}, "c1")), text("sorry")]),
        tools=[divide],
    )
    result = Runner.run_sync(agent, "go")
    return [e.output for e in result.entries if e.type == "tool_result"]


@check("tool_error_text")
def _():
    agent = Agent(
        name="bot",
        model=ScriptedProvider([batch(("charge", {"amount": 1}, "c1")), text("sorry")]),
        tools=[charge],
    )
    result = Runner.run_sync(agent, "go")
    return [[e.output, e.is_error] for e in result.entries if e.type == "tool_result"]


print(json.dumps(RESULTS, sort_keys=True))
