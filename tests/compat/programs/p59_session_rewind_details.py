"""rewind: cutting inside a run keeps it tool-consistent and drops its meta."""

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


from lovia import Agent, InMemorySession, Runner, SQLiteSession, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def look(q: str) -> str:
    """Look."""
    return f"saw {q}"


async def fill(session):
    for i in range(2):
        agent = Agent(
            name="a",
            model=ScriptedProvider(
                [call("look", {"q": str(i)}, call_id=f"l{i}"), text(f"answer {i}")]
            ),
            tools=[look],
        )
        await Runner.run(agent, f"q{i}", session=session, session_id="s")


def scenario(make):
    async def main():
        session = make()
        await fill(session)
        out = {}
        # cut right after run 2's tool call: the dangling call must go too
        out["removed"] = await session.rewind("s", keep_entries=6)
        segs = await session.segments("s")
        out["segments"] = [
            [[e.type for e in seg.entries], seg.meta is None or sorted(seg.meta)] for seg in segs
        ]
        out["flat"] = [e.type for e in await session.load("s")]
        p = ScriptedProvider([text("fresh")])
        await Runner.run(
            Agent(name="a", model=p, tools=[look]), "again", session=session, session_id="s"
        )
        out["next_run_saw"] = [
            [m.role, m.content, [c.id for c in m.tool_calls]] for m in p.calls[0]
        ]
        return out

    return main()


@check("in_memory")
def _():
    return scenario(InMemorySession)


@check("sqlite")
def _():
    return scenario(lambda: SQLiteSession("rewind.db"))


print(json.dumps(RESULTS, sort_keys=True))
