"""The testing page's calculator: one tool call, then an answer."""

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


from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@check("run")
def _():
    async def main():
        agent = Agent(
            name="calc",
            model=ScriptedProvider(
                [call("add", {"a": 2, "b": 3}, call_id="c1"), text("The answer is 5.")]
            ),
            tools=[add],
        )
        result = await agent.run("What is 2 + 3?")
        out = []
        for e in result.entries:
            d = {"cls": type(e).__name__, "type": e.type}
            for field in (
                "role",
                "content",
                "call_id",
                "name",
                "arguments",
                "output",
                "raw",
                "is_error",
            ):
                if hasattr(e, field):
                    d[field] = getattr(e, field)
            out.append(d)
        return {"output": result.output, "turns": result.turns, "entries": out}

    return main()


@check("tool_fields")
def _():
    return {
        "name": add.name,
        "description": add.description,
        "parameters": add.parameters,
        "parallel": add.parallel,
        "retries": add.retries,
        "timeout": add.timeout,
        "needs_approval": add.needs_approval,
        "max_output_chars": add.max_output_chars,
    }


print(json.dumps(RESULTS, sort_keys=True))
