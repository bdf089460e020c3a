"""Who sees what: RunResult.entries vs ctx.entries vs session history vs snapshot."""

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
    AgentHooks,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    Runner,
    events,
    system,
    user,
)
from lovia.testing import ScriptedProvider, text


@check("views")
def _():
    async def main():
        session = InMemorySession()
        cp = InMemoryCheckpointer()
        await Runner.run(
            Agent(name="a", instructions="Sys.", model=ScriptedProvider([text("first answer")])),
            "first",
            session=session,
            session_id="s",
        )
        seen = {}
        hooks = AgentHooks()

        @hooks.on(events.RunCompleted)
        def done(ev, ctx):
            seen["ctx_entries"] = [
                [e.type, getattr(e, "role", None), e.content] for e in ctx.entries
            ]
            seen["ctx_messages"] = [[m.role, m.content] for m in ctx.messages]

        agent = Agent(
            name="a",
            instructions="Sys.",
            model=ScriptedProvider([text("second answer")]),
            hooks=hooks,
        )
        r = await Runner.run(
            agent,
            [system("Extra."), user("second")],
            session=session,
            session_id="s",
            checkpoint=CheckpointOptions(cp, "r2"),
        )
        snap = await cp.load("r2")
        return {
            "result_entries": [[e.type, getattr(e, "role", None), e.content] for e in r.entries],
            "result_messages": [[m.role, m.content] for m in r.messages],
            "session": [[e.type, e.content] for e in await session.load("s")],
            "snapshot": [[e.type, e.content] for e in snap.entries],
            **seen,
        }

    return main()


print(json.dumps(RESULTS, sort_keys=True))
