"""Approval edge cases: forgetful UI, release(), an 'ask' handler, a raising predicate."""

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
from lovia.testing import ScriptedProvider, batch, text

ran = []


@tool(needs_approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    ran.append(path)
    return "deleted"


def boom(args, ctx):
    raise RuntimeError("predicate bug")


@tool(needs_approval=boom)
def risky() -> str:
    """Risky."""
    ran.append("risky")
    return "done"


def agent(**kw):
    return Agent(
        name="a",
        model=ScriptedProvider(
            [
                batch(
                    ("delete", {"path": "logs/old.txt"}, "d1"),
                    ("delete", {"path": "logs/older.txt"}, "d2"),
                ),
                text("ok"),
            ]
        ),
        tools=[delete],
        **kw,
    )


def results(r):
    return {e.call_id: [e.is_error, e.output] for e in r.entries if e.type == "tool_result"}


@check("forgetful_ui")
def _():
    async def main():
        ran.clear()
        handle = Runner.stream(agent(), "clean up")
        asked = [ev.call.id async for ev in handle if isinstance(ev, events.ApprovalRequired)]
        return [asked, results(await handle), list(ran)]

    return main()


@check("release")
def _():
    async def main():
        ran.clear()
        handle = Runner.stream(agent(), "clean up")
        async for ev in handle:
            if isinstance(ev, events.ApprovalRequired) and ev.call.id == "d1":
                ev.approve()
                handle.approvals.release(decision=False)
        return [results(await handle), list(ran)]

    return main()


@check("ask_handler_defers_to_stream")
def _():
    async def main():
        ran.clear()
        handle = Runner.stream(agent(approval_handler=lambda call, ctx: "ask"), "clean up")
        async for ev in handle:
            if isinstance(ev, events.ApprovalRequired):
                ev.approve() if ev.call.id == "d2" else ev.reject()
        return [results(await handle), list(ran)]

    return main()


@check("ask_handler_non_streaming")
def _():
    ran.clear()
    r = Runner.run_sync(agent(approval_handler=lambda call, ctx: "ask"), "clean up")
    return [results(r), list(ran)]


@check("raising_predicate_denies")
def _():
    ran.clear()
    r = Runner.run_sync(
        Agent(
            name="a",
            model=ScriptedProvider([batch(("risky", {}, "r1")), text("ok")]),
            tools=[risky],
        ),
        "go",
    )
    return [
        [e.type for e in r.entries],
        [[e.is_error, e.output.split(":")[0]] for e in r.entries if e.type == "tool_result"],
        list(ran),
    ]


print(json.dumps(RESULTS, sort_keys=True))
