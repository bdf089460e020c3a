"""RunHead and RunSnapshot: fields and their dict/JSON round trips."""

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


from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    RunHead,
    Runner,
    RunSnapshot,
    Usage,
)
from lovia.testing import ScriptedProvider, text


@check("head_defaults")
def _():
    h = RunHead(agent_name="bot", usage=Usage(input_tokens=3, output_tokens=4), turns=2)
    return [
        h.status,
        h.output,
        h.error,
        h.last_input_tokens,
        h.context_state,
        h.pending_handoff,
        h.started_at,
        isinstance(h.updated_at, float),
    ]


@check("head_dict")
def _():
    h = RunHead(
        agent_name="bot",
        usage=Usage(input_tokens=3, output_tokens=4),
        turns=2,
        status="completed",
        output="done",
        started_at=10.0,
        updated_at=11.0,
    )
    d = h.to_dict()
    back = RunHead.from_dict(d)
    js = RunHead.from_json(h.to_json())
    return [d, back == h, js == h]


@check("snapshot_roundtrip")
def _():
    async def main():
        cp = InMemoryCheckpointer()
        await Runner.run(
            Agent(name="bot", model=ScriptedProvider([text("fine")])),
            "hi",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
        snap = await cp.load("r1")
        d = snap.to_dict()
        back = RunSnapshot.from_dict(d)
        js = RunSnapshot.from_json(snap.to_json())
        head = snap.head
        return {
            "keys": sorted(d),
            "entries": d["entries"],
            "status": d["status"],
            "usage": d["usage"],
            "same": [
                back.entries == snap.entries,
                back.status == snap.status,
                js.output == snap.output,
                back.run_id,
            ],
            "head": [
                type(head).__name__,
                head.agent_name,
                head.status,
                head.turns,
                isinstance(head.started_at, float),
            ],
        }

    return main()


@check("from_parts")
def _():
    from lovia.transcript import InputEntry

    h = RunHead(agent_name="bot", usage=Usage(), turns=0, status="interrupted")
    s = RunSnapshot.from_parts("rid", [InputEntry(role="user", content="x")], h)
    return [s.run_id, s.agent_name, s.status, [e.content for e in s.entries]]


print(json.dumps(RESULTS, sort_keys=True))
