"""SQLiteSession on a file: reopen, trim old tool results, rewind the tail."""

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


from lovia import Agent, Runner, SQLiteSession, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def big() -> str:
    """Return a big payload."""
    return "x" * 2000


@check("reopen_and_maintain")
def _():
    async def main():
        s = SQLiteSession("chat.db")
        for i in range(3):
            agent = Agent(
                name="bot",
                model=ScriptedProvider([call("big", {}, call_id=f"b{i}"), text(f"answer {i}")]),
                tools=[big],
            )
            await Runner.run(agent, f"question {i}", session=s, session_id="u1")
        reopened = SQLiteSession("chat.db")
        flat = await reopened.load("u1")
        out = {
            "types": [e.type for e in flat],
            "sizes": [len(e.output) for e in flat if e.type == "tool_result"],
        }
        out["trimmed"] = await reopened.trim_tool_results("u1", keep_chars=400, keep_runs=1)
        after = await reopened.load("u1")
        out["sizes_after"] = [
            [len(e.output) < 1000, e.output.startswith("x" * 100)]
            for e in after
            if e.type == "tool_result"
        ]
        out["never_longer"] = all(len(a.output) <= 2000 for a in after if a.type == "tool_result")
        out["trim_again"] = await reopened.trim_tool_results("u1", keep_chars=400, keep_runs=1)
        out["rewind"] = await reopened.rewind("u1", keep_entries=6)
        out["after_rewind"] = [e.type for e in await reopened.load("u1")]
        out["segments_after_rewind"] = len(await reopened.segments("u1"))
        out["rewind_past_end"] = await reopened.rewind("u1", keep_entries=100)
        out["rewind_all"] = await reopened.rewind("u1", keep_entries=0)
        out["empty"] = await reopened.load("u1")
        return out

    return main()


@check("wal_flag")
def _():
    async def main():
        s = SQLiteSession("wal.db", wal=True)
        await Runner.run(
            Agent(name="bot", model=ScriptedProvider([text("hi")])), "q", session=s, session_id="s"
        )
        return [e.type for e in await SQLiteSession("wal.db").load("s")]

    return main()


@check("stores_module")
def _():
    import lovia.stores as st
    from lovia import InMemoryCheckpointer, InMemorySession, SQLiteCheckpointer
    from lovia import SQLiteSession as S

    return [
        st.SQLiteSession is S,
        st.InMemorySession is InMemorySession,
        st.SQLiteCheckpointer is SQLiteCheckpointer,
        st.InMemoryCheckpointer is InMemoryCheckpointer,
    ]


print(json.dumps(RESULTS, sort_keys=True))
