"""Context policy settings on an agent and a run: Compaction with a user's ResultStore."""

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


from lovia import Agent, Compaction, Runner, tool
from lovia.testing import ScriptedProvider, call, text


class RecordingStore:
    """A user's ResultStore: two methods."""

    def __init__(self):
        self.items = {}

    async def put(self, key, content):
        self.items[key] = content

    async def get(self, key):
        return self.items.get(key)


@tool
def small() -> str:
    """Small output."""
    return "tiny result"


@check("archived_outputs")
def _():
    store = RecordingStore()
    agent = Agent(
        name="a",
        model=ScriptedProvider([call("small", {}), text("ok")]),
        tools=[small],
        context_policy=Compaction(store=store),
    )
    r = Runner.run_sync(agent, "go")
    return [r.output, "tiny result" in store.items.values()]


@check("run_override")
def _():
    store = RecordingStore()
    provider = ScriptedProvider([call("small", {}), text("ok")])
    r = Runner.run_sync(
        Agent(name="a", model=provider, tools=[small]),
        "go",
        context_policy=Compaction(context_window=200_000, store=store),
    )
    return [r.output, [[m.role, m.content] for m in provider.calls[1]]]


@check("noop_policy")
def _():
    from lovia.context import NoopContextPolicy

    provider = ScriptedProvider([text("ok")])
    r = Runner.run_sync(Agent(name="a", model=provider, context_policy=NoopContextPolicy()), "go")
    return r.output


print(json.dumps(RESULTS, sort_keys=True))
