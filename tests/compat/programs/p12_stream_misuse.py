"""RunHandle misuse: iterating twice, breaking out, awaiting an abandoned run."""

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


from lovia import Agent, Runner, tool
from lovia.testing import ScriptedProvider, call, text

ran = []


@tool
def side_effect(n: int) -> str:
    """Do something visible."""
    ran.append(n)
    return "done"


def agent():
    return Agent(
        name="bot",
        model=ScriptedProvider([call("side_effect", {"n": 1}), text("ok")]),
        tools=[side_effect],
    )


@check("iterate_twice")
def _():
    async def main():
        handle = Runner.stream(agent(), "go")
        first = [type(ev).__name__ async for ev in handle][-1]
        try:
            second = [type(ev).__name__ async for ev in handle]
        except RuntimeError:
            second = "RuntimeError"
        return [first, second]

    return main()


@check("unread_handle_runs_nothing")
def _():
    async def main():
        ran.clear()
        Runner.stream(agent(), "go")
        await asyncio.sleep(0.05)
        return list(ran)

    return main()


@check("break_out")
def _():
    async def main():
        ran.clear()
        handle = Runner.stream(agent(), "go")
        async for _ev in handle:
            break
        await asyncio.sleep(0.05)
        try:
            await handle.result()
            outcome = "result"
        except Exception as exc:
            outcome = type(exc).__name__
        return [outcome, list(ran)]

    return main()


@check("await_without_iterating")
def _():
    async def main():
        ran.clear()
        result = await Runner.stream(agent(), "go")
        return [result.output, list(ran)]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
