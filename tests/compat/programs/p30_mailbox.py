"""Steering a live run with a Mailbox: pushes from outside and from a TurnStarted hook."""

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
def look() -> str:
    """Look."""
    return "seen"


@check("mailbox_api")
def _():
    from lovia import Mailbox

    mb = Mailbox()
    t1 = mb.push("first")
    t2 = mb.push("second")
    removed = mb.remove(t1)
    again = mb.remove(t1)
    return [type(t1).__name__, t1 != t2, removed, again, bool(mb)]


@check("hook_push_lands_same_turn")
def _():
    async def main():
        hooks = AgentHooks()

        @hooks.on(events.TurnStarted)
        def steer(ev, ctx):
            if ev.turn == 2:
                ctx.mailbox.push("Focus on the 5xx spike.")

        provider = ScriptedProvider([call("look", {}), text("focused")])
        agent = Agent(name="analyst", model=provider, tools=[look], hooks=hooks)
        injected = []
        handle = Runner.stream(agent, "Analyze these logs.")
        async for ev in handle:
            if isinstance(ev, events.UserMessageInjected):
                injected.append([ev.content, ev.turn])
        r = await handle
        return {
            "injected": injected,
            "entries": [[e.type, getattr(e, "content", None)] for e in r.entries],
            "model_saw_last": [provider.calls[1][-1].role, provider.calls[1][-1].content],
        }

    return main()


@check("caller_mailbox_before_run")
def _():
    async def main():
        from lovia import Mailbox

        mb = Mailbox()
        mb.push("also: be brief")
        provider = ScriptedProvider([text("ok")])
        r = await Runner.run(Agent(name="a", model=provider), "hello", mailbox=mb)
        return [[m.role, m.content] for m in provider.calls[0]] + [
            [e.type for e in r.entries],
            bool(mb),
        ]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
