"""CancelToken: before the run, from a tool, from the handle."""

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


from lovia import Agent, CancelToken, RunCancelled, Runner, events, tool
from lovia.testing import ScriptedProvider, call, text


@check("token_api")
def _():
    t = CancelToken()
    before = t.is_cancelled
    t.check()
    t.cancel("stop")
    try:
        t.check()
        raised = None
    except RunCancelled as exc:
        raised = str(exc).splitlines()[0]
    return [before, t.is_cancelled, raised]


@check("cancelled_before_start")
def _():
    t = CancelToken()
    t.cancel()
    p = ScriptedProvider([text("x")])
    try:
        Runner.run_sync(Agent(name="bot", model=p), "go", cancel_token=t)
        return "completed"
    except RunCancelled:
        return ["RunCancelled", len(p.calls)]


@check("tool_cancels_own_run")
def _():
    from lovia import RunContext

    @tool
    def stop_now(ctx: RunContext) -> str:
        """Stop."""
        ctx.cancel_token.cancel("tool said so")
        return "stopping"

    p = ScriptedProvider([call("stop_now", {}), text("never")])
    try:
        Runner.run_sync(Agent(name="bot", model=p, tools=[stop_now]), "go")
        return "completed"
    except RunCancelled:
        return ["RunCancelled", len(p.calls)]


@check("handle_cancel")
def _():
    async def main():
        @tool
        def slow() -> str:
            """Slow."""
            return "s"

        handle = Runner.stream(
            Agent(
                name="bot", model=ScriptedProvider([call("slow", {}), text("never")]), tools=[slow]
            ),
            "go",
        )
        names = []
        async for ev in handle:
            names.append(type(ev).__name__)
            if isinstance(ev, events.TurnStarted):
                handle.cancel("user clicked stop")
        try:
            await handle
            return [names[-1], "completed"]
        except RunCancelled:
            return [names[-1], "RunCancelled"]

    return main()


@check("cancel_at_final_turn_start")
def _():
    async def main():
        handle = Runner.stream(Agent(name="bot", model=ScriptedProvider([text("answer")])), "go")
        async for ev in handle:
            if isinstance(ev, events.TurnStarted):
                handle.cancel("stop")
        try:
            return (await handle).output
        except RunCancelled:
            return "RunCancelled"

    return main()


@check("final_turn_completes")
def _():
    async def main():
        handle = Runner.stream(Agent(name="bot", model=ScriptedProvider([text("answer")])), "go")
        async for ev in handle:
            if isinstance(ev, events.TextDelta):
                handle.cancel()
        try:
            return (await handle).output
        except RunCancelled:
            return "RunCancelled"

    return main()


print(json.dumps(RESULTS, sort_keys=True))
