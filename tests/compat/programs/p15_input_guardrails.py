"""Input guardrails: what they receive, and how they trip a run."""

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


from lovia import Agent, GuardrailTripped, Runner, user
from lovia.testing import ScriptedProvider, text


@check("receives_messages")
def _():
    seen = []

    async def inspect(messages, ctx):
        seen.extend([type(m).__name__, m.role, m.content] for m in messages)

    agent = Agent(
        name="bot",
        instructions="sys",
        model=ScriptedProvider([text("ok")]),
        input_guardrails=[inspect],
    )
    Runner.run_sync(agent, "hello")
    return seen


@check("raise_trips")
def _():
    async def no_email(messages, ctx):
        if any("@" in str(m.content) for m in messages):
            raise GuardrailTripped("Email addresses are not allowed.")

    provider = ScriptedProvider([text("never")])
    agent = Agent(name="bot", model=provider, input_guardrails=[no_email])
    try:
        Runner.run_sync(agent, [user("mail me at a@b.c")])
        return "passed"
    except GuardrailTripped as exc:
        return [str(exc), len(provider.calls)]


@check("last_message_only")
def _():
    def check_last(messages, ctx):
        return "blocked" if "forbidden" in str(messages[-1].content) else None

    agent = Agent(name="bot", model=ScriptedProvider([text("ok")]), input_guardrails=[check_last])
    return Runner.run_sync(agent, "allowed words").output


@check("stream_ends_in_run_failed")
def _():
    async def main():

        agent = Agent(
            name="bot", model=ScriptedProvider([text("x")]), input_guardrails=[lambda m, c: "nope"]
        )
        handle = Runner.stream(agent, "go")
        evs = [type(ev).__name__ async for ev in handle]
        try:
            await handle
            return [evs, "no error"]
        except GuardrailTripped as exc:
            return [evs[-1], str(exc)]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
