"""Output guardrails: truthy returns, True, falsy passes, order."""

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


from lovia import Agent, GuardrailTripped, Runner
from lovia.testing import ScriptedProvider, text


def run(guards, answer="The sky is blue."):
    agent = Agent(name="bot", model=ScriptedProvider([text(answer)]), output_guardrails=guards)
    try:
        return ["ok", Runner.run_sync(agent, "q").output]
    except GuardrailTripped as exc:
        return ["tripped", str(exc)]


@check("string_reason")
def _():
    async def must_cite(output, ctx):
        if "source:" not in str(output).lower():
            return "Missing source citation."

    return run([must_cite])


@check("true_trips")
def _():
    return run([lambda output, ctx: True])


@check("falsy_pass")
def _():
    return [run([lambda o, c: None]), run([lambda o, c: False]), run([lambda o, c: ""])]


@check("first_violation_wins")
def _():
    return run([lambda o, c: "first", lambda o, c: "second"])


@check("is_lovia_error")
def _():
    from lovia import LoviaError

    return issubclass(GuardrailTripped, LoviaError)


print(json.dumps(RESULTS, sort_keys=True))
