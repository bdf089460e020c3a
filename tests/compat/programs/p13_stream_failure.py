"""A failing streamed run: iteration ends in RunFailed, result() raises."""

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


from lovia import Agent, MaxTurnsExceeded, Runner, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def loop() -> str:
    """Loop."""
    return "again"


@check("max_turns")
def _():
    async def main():
        agent = Agent(
            name="bot",
            model=ScriptedProvider([call("loop", {}), call("loop", {}), text("never")]),
            tools=[loop],
        )
        handle = Runner.stream(agent, "go", max_turns=1)
        names = [type(ev).__name__ async for ev in handle]
        try:
            await handle.result()
            raised = None
        except MaxTurnsExceeded as exc:
            raised = [type(exc).__name__, isinstance(exc, Exception)]
        return {
            "last": names[-1],
            "terminal_count": names.count("RunFailed") + names.count("RunCompleted"),
            "error": raised,
        }

    return main()


@check("run_failed_error")
def _():
    async def main():
        from lovia import events

        agent = Agent(name="bot", model=ScriptedProvider([]))
        errs = [
            type(ev.error).__name__
            async for ev in Runner.stream(agent, "go")
            if isinstance(ev, events.RunFailed)
        ]
        return errs

    return main()


@check("run_raises_directly")
def _():
    try:
        Runner.run_sync(
            Agent(name="bot", model=ScriptedProvider([call("loop", {})]), tools=[loop]),
            "go",
            max_turns=1,
        )
    except MaxTurnsExceeded as exc:
        return type(exc).__name__
    return "no error"


print(json.dumps(RESULTS, sort_keys=True))
