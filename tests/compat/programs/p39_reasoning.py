"""Scripted reasoning: ReasoningDelta events, reasoning entries, Message.reasoning."""

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


from lovia import Agent, Runner, events
from lovia.testing import ScriptedProvider, text


@check("stream")
def _():
    async def main():
        provider = ScriptedProvider([text("42", reasoning="think")])
        handle = Runner.stream(Agent(name="a", model=provider), "q")
        kinds = []
        async for ev in handle:
            if isinstance(ev, (events.ReasoningDelta, events.TextDelta)):
                kinds.append([type(ev).__name__, ev.delta])
            elif isinstance(ev, events.MessageCompleted):
                kinds.append(
                    ["MessageCompleted", [[type(e).__name__, e.content] for e in ev.entries]]
                )
        r = await handle
        return {
            "events": kinds,
            "entries": [[e.type, e.content, getattr(e, "provider", None)] for e in r.entries],
            "messages": [[m.role, m.content, m.reasoning] for m in r.messages],
        }

    return main()


@check("reasoning_seen_next_turn")
def _():
    from lovia import InMemorySession

    s = InMemorySession()
    Runner.run_sync(
        Agent(name="a", model=ScriptedProvider([text("first", reasoning="why")])),
        "q1",
        session=s,
        session_id="x",
    )
    provider = ScriptedProvider([text("second")])
    Runner.run_sync(Agent(name="a", model=provider), "q2", session=s, session_id="x")
    return [[m.role, m.content, m.reasoning] for m in provider.calls[0]]


print(json.dumps(RESULTS, sort_keys=True))
