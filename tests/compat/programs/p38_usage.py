"""Usage arithmetic and how a run accumulates it."""

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


from lovia import Agent, Runner, Usage, tool
from lovia.testing import ScriptedProvider, call, text


@check("arithmetic")
def _():
    u = Usage(input_tokens=10, output_tokens=5, cache_read_tokens=4)
    u.add(Usage(input_tokens=1, output_tokens=2, cache_write_tokens=3))
    c = u.clone()
    c.add(Usage(input_tokens=100))
    return [
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.total_tokens,
        c.input_tokens,
        u.input_tokens,
    ]


@check("defaults")
def _():
    u = Usage()
    return [
        u.input_tokens,
        u.output_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.total_tokens,
        Usage(1, 2).total_tokens,
    ]


@check("run_usage")
def _():
    @tool
    def f() -> str:
        """F."""
        return "x"

    r = Runner.run_sync(
        Agent(
            name="a",
            model=ScriptedProvider([call("f", {}), call("f", {}, call_id="c2"), text("done")]),
            tools=[f],
        ),
        "go",
    )
    return [r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens, r.turns]


print(json.dumps(RESULTS, sort_keys=True))
