"""Instruction forms: callables, fragments, with_instructions, clone, extra_instructions."""

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


from lovia import Agent, Runner
from lovia.testing import ScriptedProvider, text


def system_of(agent, **kw):
    provider = ScriptedProvider([text("ok")])
    Runner.run_sync(agent.clone(model=provider), "hi", **kw)
    first = provider.calls[0][0]
    return first.content if first.role == "system" else None


@check("callable_sync_and_async")
def _():
    async def instr(ctx):
        return f"You support the {ctx.deps['plan']} plan."

    return [
        system_of(Agent(name="s", instructions=instr), deps={"plan": "pro"}),
        system_of(Agent(name="s", instructions=lambda ctx: "sync form")),
    ]


@check("fragments")
def _():
    agent = Agent(name="s", instructions="You are a support agent.")

    @agent.instruction
    async def tier(ctx) -> str:
        return f"User tier: {ctx.deps['tier']}" if ctx.deps else ""

    @agent.instruction
    def skip(ctx) -> str:
        return ""

    return [system_of(agent, deps={"tier": "gold"}), system_of(agent)]


@check("copy_on_register")
def _():
    base = Agent(name="s", instructions="Base.")

    @base.instruction
    def before(ctx):
        return "Before."

    clone = base.clone()

    @base.instruction
    def after(ctx):
        return "After."

    functional = base.with_instructions(lambda ctx: "Extra.")
    return [system_of(clone), system_of(base), system_of(functional)]


@check("extra_instructions")
def _():
    return system_of(
        Agent(name="s", instructions="Base."), extra_instructions="Today only: be brief."
    )


@check("no_instructions")
def _():
    return system_of(Agent(name="s"))


@check("ctx_system_prompt")
def _():
    seen = []

    def guard(messages, ctx):
        seen.append(ctx.system_prompt)

    Runner.run_sync(
        Agent(
            name="s",
            instructions="Base.",
            model=ScriptedProvider([text("x")]),
            input_guardrails=[guard],
        ),
        "q",
        extra_instructions="More.",
    )
    return seen


@check("clone_fields")
def _():
    a = Agent(name="s", instructions="A.", model=ScriptedProvider([]))
    b = a.clone(name="t")
    return [b.name, b.instructions, b.model is a.model, a.name]


print(json.dumps(RESULTS, sort_keys=True))
