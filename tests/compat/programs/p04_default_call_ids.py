"""Scripts without explicit call ids: the ids the tools and the model see."""

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
from lovia.testing import ScriptedProvider, batch, call, text


@tool
def ping(n: int) -> str:
    """Ping."""
    return f"pong {n}"


@check("ids")
def _():
    async def main():
        provider = ScriptedProvider(
            [
                call("ping", {"n": 1}),
                batch(("ping", {"n": 2}), ("ping", {"n": 3}), ("ping", {"n": 4}, "mine")),
                text("ok"),
            ]
        )
        agent = Agent(name="bot", model=provider, tools=[ping])
        started = []
        async for ev in Runner.stream(agent, "go"):
            if isinstance(ev, events.ToolCallStarted):
                started.append(ev.call.id)
        ids = [tc.id for m in provider.calls[-1] for tc in m.tool_calls]
        results = [(m.tool_call_id, m.content) for m in provider.calls[-1] if m.role == "tool"]
        return {"started": sorted(started), "calls": ids, "results": sorted(results)}

    return main()


@check("scripted_turn_shapes")
def _():
    t = text("hey")
    c = call("ping", {"n": 1})
    b = batch(("a", {}), ("b", {"x": 1}))
    return {
        "text": [
            t.content,
            [tc.id for tc in t.tool_calls],
            t.usage.input_tokens,
            t.usage.output_tokens,
            t.finish_reason,
        ],
        "call": [c.content, [[tc.id, tc.name, tc.arguments] for tc in c.tool_calls]],
        "batch": [[tc.id, tc.name, tc.arguments] for tc in b.tool_calls],
    }


print(json.dumps(RESULTS, sort_keys=True))
