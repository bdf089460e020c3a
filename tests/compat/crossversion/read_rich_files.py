"""Run on ``rich.db`` another lovia wrote: read it, go on with every session, replay and resume."""

import asyncio
import json
import re

from rich_tools import City, add, big, boom, rm

from lovia import (
    Agent,
    CheckpointOptions,
    RunBudget,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
)
from lovia.testing import ScriptedProvider, call, text


def part(p):
    if isinstance(p, str):
        return p
    data = getattr(p, "data", None) or ""
    fields = ("text", "url", "mime_type", "detail")
    return [type(p).__name__, data[:12], *(getattr(p, f, None) for f in fields)]


def ent(e):
    c = getattr(e, "content", None)
    if isinstance(c, list):
        c = [part(p) for p in c]
    fields = ("role", "call_id", "name", "arguments", "output", "is_error")
    return [e.type, c, *(getattr(e, f, None) for f in fields)]


def msgs(calls):
    out = []
    for m in calls:
        c = m.content if isinstance(m.content, (str, type(None))) else [part(p) for p in m.content]
        out.append([m.role, c, [[t.id, t.name, t.arguments] for t in (m.tool_calls or [])]])
    return out


SESSIONS = ["s-img", "s-tools", "s-struct", "s-rewind", "s-max", "s-bud", "s-ap", "s-weird"]
SESSIONS.append("s-hand")
RUNS = ["r-img", "r-tools", "r-struct", "r-rw0", "r-rw1", "r-rw2", "r-max", "r-bud", "r-ap"]
RUNS += ["r-weird", "r-hand"]


async def read(out, prefix, session, cp):
    for sid in SESSIONS:
        out[f"{prefix}segments:{sid}"] = [
            [seg.run_id, [ent(e) for e in seg.entries], sorted(seg.meta or {})]
            for seg in await session.segments(sid)
        ]
        out[f"{prefix}load:{sid}"] = [ent(e) for e in await session.load(sid)]
    for rid in RUNS:
        snap = await cp.load(rid)
        out[f"{prefix}checkpoint:{rid}"] = [
            snap.status,
            snap.turns,
            repr(snap.output),
            snap.agent_name,
            [ent(e) for e in snap.entries],
        ]


async def main() -> dict:
    out = {}
    session, cp = SQLiteSession("rich.db"), SQLiteCheckpointer("rich.db")
    await read(out, "", session, cp)
    for sid in SESSIONS:
        provider = ScriptedProvider([text(f"next for {sid}")])
        agent = Agent(name="on", instructions="Go on.", model=provider, tools=[add, boom, big, rm])
        r = await Runner.run(agent, "continue", session=session, session_id=sid)
        out[f"continue:{sid}"] = [r.output, msgs(provider.calls[0])]
    resumed = {
        "r-img": (Agent(name="vis", model=ScriptedProvider([])), {}),
        "r-tools": (Agent(name="tools", model=ScriptedProvider([]), tools=[add, boom, big]), {}),
        "r-struct": (Agent(name="st", model=ScriptedProvider([]), output_type=City), {}),
        "r-max": (
            Agent(name="loop", model=ScriptedProvider([text("finally")]), tools=[add]),
            {"max_turns": 6},
        ),
        "r-bud": (
            Agent(
                name="bud",
                model=ScriptedProvider([call("add", {"a": 2, "b": 2}, call_id="k2"), text("ok")]),
                tools=[add],
            ),
            {"budget": RunBudget(max_tool_calls=5)},
        ),
        "r-ap": (Agent(name="ap", model=ScriptedProvider([]), tools=[rm]), {}),
        "r-weird": (Agent(name="weird", model=ScriptedProvider([]), tools=[add]), {}),
        "r-hand": (
            Agent(
                name="triage",
                model=ScriptedProvider([]),
                handoffs=[Agent(name="billing", model=ScriptedProvider([]))],
            ),
            {},
        ),
    }
    for rid, (agent, options) in resumed.items():
        r = await Runner.run(
            agent,
            "ignored",
            checkpoint=CheckpointOptions(cp, rid),
            session=session,
            session_id="s-" + rid[2:],
            **options,
        )
        out[f"run:{rid}"] = [
            repr(r.output),
            r.turns,
            r.final_agent.name,
            [msgs(c) for c in agent.model.calls],
        ]
    await read(out, "after:", session, cp)
    return out


# Run ids the runs above generate differ from one execution to the next.
print(re.sub(r"\b[0-9a-f]{32}\b", "<run id>", json.dumps(asyncio.run(main()), sort_keys=True)))
