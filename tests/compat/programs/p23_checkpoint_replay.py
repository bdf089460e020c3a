"""A completed run_id replays without touching the model; events and fields on replay."""

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


from lovia import Agent, CheckpointOptions, InMemoryCheckpointer, InMemorySession, Runner, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


cp = InMemoryCheckpointer()
session = InMemorySession()


@check("first")
def _():
    agent = Agent(
        name="calc", model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]), tools=[add]
    )
    r = Runner.run_sync(
        agent, "1+2", checkpoint=CheckpointOptions(cp, "job-1"), session=session, session_id="s"
    )
    return [r.output, r.turns, r.usage.total_tokens, [e.type for e in r.entries]]


@check("replay")
def _():
    provider = ScriptedProvider([])
    agent = Agent(name="calc", model=provider, tools=[add])
    r = Runner.run_sync(
        agent,
        "ignored input",
        checkpoint=CheckpointOptions(cp, "job-1"),
        session=session,
        session_id="s",
    )
    return [
        r.output,
        r.turns,
        r.finish_reason,
        r.usage.total_tokens,
        [e.type for e in r.entries],
        len(provider.calls),
        r.final_agent.name,
    ]


@check("replay_stream_events")
def _():
    async def main():
        agent = Agent(name="calc", model=ScriptedProvider([]), tools=[add])
        return [
            type(ev).__name__
            async for ev in Runner.stream(agent, "x", checkpoint=CheckpointOptions(cp, "job-1"))
        ]

    return main()


@check("session_not_duplicated")
def _():
    async def main():
        return [len(await session.segments("s")), [e.type for e in await session.load("s")]]

    return main()


@check("snapshot")
def _():
    async def main():
        snap = await cp.load("job-1")
        return [
            type(snap).__name__,
            snap.run_id,
            snap.agent_name,
            snap.status,
            snap.turns,
            snap.output,
            [e.type for e in snap.entries],
            snap.usage.total_tokens,
        ]

    return main()


@check("missing_run")
def _():
    async def main():
        return await cp.load("nope")

    return main()


print(json.dumps(RESULTS, sort_keys=True))
