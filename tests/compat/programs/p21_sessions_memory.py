"""InMemorySession: a second run remembers the first; segments and their meta."""

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


from lovia import Agent, InMemorySession, Runner
from lovia.testing import ScriptedProvider, text


@check("conversation")
def _():
    async def main():
        session = InMemorySession()
        p1 = ScriptedProvider([text("Noted: Atlas.")])
        p2 = ScriptedProvider([text("Atlas.")])
        await Runner.run(
            Agent(name="bot", model=p1),
            "My project is called Atlas.",
            session=session,
            session_id="u1",
        )
        r2 = await Runner.run(
            Agent(name="bot", model=p2),
            "What is my project called?",
            session=session,
            session_id="u1",
        )
        segs = await session.segments("u1")
        flat = await session.load("u1")
        return {
            "second_saw": [[m.role, m.content] for m in p2.calls[0]],
            "r2_entries": [e.type for e in r2.entries],
            "segments": [
                [
                    bool(s.run_id),
                    [e.type for e in s.entries],
                    sorted((s.meta or {}).keys()),
                    sorted(((s.meta or {}).get("timing") or {}).keys()),
                ]
                for s in segs
            ],
            "flat": [[e.type, e.content] for e in flat],
            "other": await session.load("u2"),
        }

    return main()


@check("append_idempotent_and_clear")
def _():
    async def main():
        from lovia.transcript import InputEntry

        s = InMemorySession()
        await s.append("k", [InputEntry(role="user", content="a")], run_id="r1")
        await s.append("k", [InputEntry(role="user", content="b")], run_id="r1")
        await s.append("k", [InputEntry(role="user", content="c")], run_id="r2", meta={"x": 1})
        before = [
            [seg.run_id, [e.content for e in seg.entries], seg.meta]
            for seg in await s.segments("k")
        ]
        await s.clear("k")
        return [before, await s.load("k")]

    return main()


@check("session_id_in_ctx")
def _():
    async def main():
        seen = []

        def instr(ctx):
            seen.append(ctx.session_id)
            return "sys"

        await Runner.run(
            Agent(name="bot", instructions=instr, model=ScriptedProvider([text("x")])),
            "q",
            session=InMemorySession(),
            session_id="abc",
        )
        return seen[:1]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
