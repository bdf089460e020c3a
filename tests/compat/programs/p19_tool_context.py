"""Tools reading the RunContext: deps, run_id, turn, messages, entries."""

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


from dataclasses import dataclass

from lovia import Agent, RunContext, Runner, tool
from lovia.testing import ScriptedProvider, call, text


@dataclass
class Deps:
    user_id: str


seen = {}


@tool
async def whoami(ctx: RunContext[Deps]) -> str:
    """Who am I."""
    seen["deps"] = ctx.deps.user_id
    seen["run_id_set"] = isinstance(ctx.run_id, str) and len(ctx.run_id) > 0
    seen["turn"] = ctx.turn
    seen["agent"] = ctx.agent.name
    seen["session_id"] = ctx.session_id
    seen["entries"] = [e.type for e in ctx.entries]
    seen["messages"] = [[type(m).__name__, m.role] for m in ctx.messages]
    seen["system_prompt"] = ctx.system_prompt
    seen["cancelled"] = ctx.cancel_token.is_cancelled
    seen["mailbox"] = type(ctx.mailbox).__name__
    seen["budget"] = ctx.budget
    return ctx.deps.user_id


@check("run")
def _():
    agent = Agent(
        name="support",
        instructions="Help.",
        model=ScriptedProvider([call("whoami", {}), text("you are u1")]),
        tools=[whoami],
    )
    result = Runner.run_sync(agent, "who?", deps=Deps("u1"))
    return result.output


@check("seen")
def _():
    return seen


@check("generic_agent")
def _():
    from lovia import Agent

    a = Agent[Deps](name="typed", model=ScriptedProvider([text("x")]))
    return a.name


print(json.dumps(RESULTS, sort_keys=True))
