"""RunResult.messages: the chat-format projection of a run with a tool."""

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
def weather(city: str) -> dict:
    """Weather for a city."""
    return {"city": city, "temp": 21}


@check("messages")
def _():
    agent = Agent(
        name="bot",
        instructions="sys",
        model=ScriptedProvider(
            [call("weather", {"city": "Oslo"}, call_id="w1"), text("21 degrees")]
        ),
        tools=[weather],
    )
    result = Runner.run_sync(agent, "weather?")
    return [
        [
            type(m).__name__,
            m.role,
            m.content,
            [(c.id, c.name, c.arguments) for c in m.tool_calls],
            m.tool_call_id,
        ]
        for m in result.messages
    ]


print(json.dumps(RESULTS, sort_keys=True))
