"""ScriptedProvider as a Provider: its attributes, single use, and agent.stream."""

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


from lovia import Agent, events
from lovia.testing import ScriptedProvider, text


@check("attributes")
def _():
    p = ScriptedProvider([text("x")])
    return [p.name, p.model, p.supports_json_schema, p.calls]


@check("single_use")
def _():
    p = ScriptedProvider([text("once")])
    agent = Agent(name="a", model=p)
    first = agent.run_sync("one").output
    try:
        agent.run_sync("two")
        second = "ran"
    except AssertionError:
        second = "AssertionError"
    return [first, second, len(p.calls)]


@check("agent_stream")
def _():
    async def main():
        handle = Agent(name="a", model=ScriptedProvider([text("hey")])).stream("hi")
        names = [type(ev).__name__ async for ev in handle if not isinstance(ev, events.TextDelta)]
        return [names, (await handle.result()).output]

    return main()


@check("stream_directly")
def _():
    async def main():
        from lovia.transcript import InputEntry

        p = ScriptedProvider([text("ab")])
        out = []
        async for d in p.stream([InputEntry(role="user", content="q")]):
            out.append([type(d).__name__, getattr(d, "text", None)])
        return [out, [[m.role, m.content] for m in p.calls[0]]]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
