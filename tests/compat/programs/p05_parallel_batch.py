"""A turn with several tool calls; serial barrier tools; results pair by call id."""

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
from lovia.testing import ScriptedProvider, batch, text

order = []


@tool
async def fetch(url: str) -> str:
    """Fetch a URL."""
    order.append(("fetch", url))
    return f"<{url}>"


@tool(parallel=False)
def migrate(name: str) -> str:
    """Apply a migration."""
    order.append(("migrate", name))
    return "applied"


@check("run")
def _():
    agent = Agent(
        name="bot",
        model=ScriptedProvider(
            [
                batch(
                    ("fetch", {"url": "a"}, "c1"),
                    ("migrate", {"name": "m1"}, "c2"),
                    ("fetch", {"url": "b"}, "c3"),
                ),
                text("fin"),
            ]
        ),
        tools=[fetch, migrate],
    )
    result = Runner.run_sync(agent, "go")
    results = {e.call_id: e.output for e in result.entries if e.type == "tool_result"}
    calls = [e.call_id for e in result.entries if e.type == "tool_call"]
    return {
        "output": result.output,
        "results": results,
        "calls": calls,
        "ran": sorted(order),
        "turns": result.turns,
    }


print(json.dumps(RESULTS, sort_keys=True))
