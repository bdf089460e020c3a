"""Run on files another lovia wrote: read the session, replay and resume the runs."""

import asyncio
import json

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.testing import ScriptedProvider, text


@tool
def add_then_stop(a: int, b: int) -> int:
    """Add, then the operator stops the run."""
    return a + b


def entry(e):
    return [
        e.type,
        getattr(e, "role", None),
        getattr(e, "content", None),
        getattr(e, "call_id", None),
        getattr(e, "output", None),
    ]


async def main() -> dict:
    out = {}
    session = SQLiteSession("chat.db")
    segs = await session.segments("u1")
    out["segments"] = [[[entry(e) for e in s.entries], sorted((s.meta or {}).keys())] for s in segs]
    out["other_session"] = [entry(e) for e in await session.load("u2")]
    cp = SQLiteCheckpointer("runs.db")
    done = await cp.load("done")
    out["done_snapshot"] = [
        done.status,
        done.turns,
        done.output,
        done.agent_name,
        [entry(e) for e in done.entries],
    ]
    stopped = await cp.load("stopped")
    out["stopped_snapshot"] = [stopped.status, stopped.turns, [entry(e) for e in stopped.entries]]

    provider = ScriptedProvider([])
    r = await Runner.run(
        Agent(name="calc", model=provider),
        "x",
        checkpoint=CheckpointOptions(cp, "done"),
        session=session,
        session_id="u1",
    )
    out["replay"] = [r.output, r.turns, len(provider.calls), len(await session.segments("u1"))]

    provider = ScriptedProvider([text("2")])
    r = await Runner.run(
        Agent(name="calc", model=provider, tools=[add_then_stop]),
        "x",
        checkpoint=CheckpointOptions(cp, "stopped"),
        session=session,
        session_id="u2",
    )
    out["resume"] = [
        r.output,
        r.turns,
        [entry(e) for e in r.entries],
        [[m.role, m.content] for m in provider.calls[0]],
    ]
    out["after_resume"] = [
        (await cp.load("stopped")).status,
        [entry(e) for e in await session.load("u2")],
    ]
    return out


print(json.dumps(asyncio.run(main()), sort_keys=True))
