"""AgentHooks: per-type handlers, tuples, catch-alls, order, context."""

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


from lovia import Agent, AgentHooks, Runner, events, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@check("order")
def _():
    log = []
    hooks = AgentHooks()

    @hooks.on(events.ToolCallStarted)
    async def started(ev, ctx):
        log.append(["started", ev.call.name, ctx.session_id, ctx.agent.name, ctx.turn])

    @hooks.on((events.RunCompleted, events.RunFailed))
    def at_end(ev, ctx):
        log.append(["end", isinstance(ev, events.RunCompleted)])

    @hooks.on_any
    def firehose(ev, ctx):
        log.append(["any", type(ev).__name__])

    @hooks.on(events.ToolCallStarted)
    def second(ev, ctx):
        log.append(["second", ev.call.id])

    agent = Agent(
        name="calc",
        model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]),
        tools=[add],
        hooks=hooks,
    )
    Runner.run_sync(agent, "go", session_id=None)
    return [e for e in log if e != ["any", "TextDelta"]]


@check("base_class")
def _():
    seen = []
    hooks = AgentHooks()

    @hooks.on(events.ToolEvent)
    def fam(ev, ctx):
        seen.append(type(ev).__name__)

    agent = Agent(
        name="calc",
        model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]),
        tools=[add],
        hooks=hooks,
    )
    Runner.run_sync(agent, "go")
    return seen


@check("raising_handler_is_logged_not_fatal")
def _():
    hooks = AgentHooks()
    calls = []

    @hooks.on(events.TurnStarted)
    def broken(ev, ctx):
        calls.append(ev.turn)
        raise RuntimeError("metrics down")

    agent = Agent(name="bot", model=ScriptedProvider([text("fine")]), hooks=hooks)
    try:
        out = Runner.run_sync(agent, "go").output
    except Exception as exc:
        out = ["raised", type(exc).__name__]
    return [out, calls]


@check("ctx_usage_in_hook")
def _():
    hooks = AgentHooks()
    seen = []

    @hooks.on(events.TurnEnded)
    def ended(ev, ctx):
        seen.append([ev.turn, ctx.turn, ctx.usage.total_tokens, len(ctx.entries)])

    agent = Agent(
        name="calc",
        model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]),
        tools=[add],
        hooks=hooks,
    )
    Runner.run_sync(agent, "go")
    return seen


print(json.dumps(RESULTS, sort_keys=True))
