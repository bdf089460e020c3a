"""Asserting on what the model saw: provider.calls holds Message lists."""

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


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def msg(m):
    return {
        "cls": type(m).__name__,
        "role": m.role,
        "content": m.content,
        "tool_calls": [[type(c).__name__, c.id, c.name, c.arguments] for c in m.tool_calls],
        "tool_call_id": m.tool_call_id,
        "name": m.name,
        "reasoning": m.reasoning,
    }


provider = ScriptedProvider([call("lookup", {"key": "k"}, call_id="c1"), text("done")])


@check("run")
def _():
    agent = Agent(name="bot", instructions="Be terse.", model=provider, tools=[lookup])
    return Runner.run_sync(agent, "hello").output


@check("calls")
def _():
    return [[msg(m) for m in turn] for turn in provider.calls]


@check("first_prompt_doc_example")
def _():
    first = provider.calls[0]
    return [first[0].role == "system", "Be terse." in first[0].content, first[-1].content]


@check("last_message_content")
def _():
    return provider.calls[1][-1].content


print(json.dumps(RESULTS, sort_keys=True))
