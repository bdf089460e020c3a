"""Tool retries, timeouts, and policies wrapping each attempt."""

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


import asyncio as _asyncio

from lovia import Agent, Runner, tool
from lovia.testing import ScriptedProvider, call, text

attempts = []


@tool(retries=2)
def flaky(key: str) -> str:
    """Sometimes blips."""
    attempts.append(key)
    if len(attempts) < 3:
        raise ConnectionError("blip")
    return f"got {key}"


@tool(timeout=0.05)
async def slow() -> str:
    """Too slow."""
    await _asyncio.sleep(5)
    return "late"


cache = {}
seen_args = []


async def cache_policy(invoke, args, ctx):
    seen_args.append(dict(args))
    key = tuple(sorted(args.items()))
    if key in cache:
        return cache[key]
    result = await invoke(args, ctx)
    cache[key] = result
    return result


calls = []


@tool(policies=[cache_policy])
async def search(query: str) -> list:
    """Search."""
    calls.append(query)
    return [query.upper()]


def result_of(script, tools, **kw):
    r = Runner.run_sync(Agent(name="a", model=ScriptedProvider(script), tools=tools, **kw), "go")
    return [
        [e.is_error, e.output if not e.is_error else e.output.split(":")[0]]
        for e in r.entries
        if e.type == "tool_result"
    ]


@check("retries")
def _():
    return [result_of([call("flaky", {"key": "k"}), text("ok")], [flaky]), list(attempts)]


@check("timeout")
def _():
    return result_of([call("slow", {}), text("ok")], [slow])


@check("policy_cache")
def _():
    out = result_of(
        [
            call("search", {"query": "tides"}, call_id="s1"),
            call("search", {"query": "tides"}, call_id="s2"),
            text("ok"),
        ],
        [search],
    )
    return [out, list(calls), seen_args]


@check("agent_default_retries")
def _():
    n = []

    @tool
    def once_broken() -> str:
        """Broken once."""
        n.append(1)
        if len(n) == 1:
            raise RuntimeError("first time")
        return "fine"

    return [
        result_of([call("once_broken", {}), text("ok")], [once_broken], default_tool_retries=1),
        len(n),
    ]


print(json.dumps(RESULTS, sort_keys=True))
