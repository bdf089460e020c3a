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


import dataclasses
from typing import Literal

from lovia import Agent, BudgetExceeded, OutputValidationError, RunBudget, Runner, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def ping() -> str:
    """Answer a ping."""
    return "pong"


@check("budget_is_a_dataclass")
def _():
    # the budgets page: make a fresh budget per run; replace() copies the limits only
    template = RunBudget(max_tool_calls=1)
    used = dataclasses.replace(template)
    agent = Agent("a", model=ScriptedProvider([call("ping", {}), call("ping", {}), text("x")]))
    try:
        Runner.run_sync(agent.clone(tools=[ping]), "go", budget=used)
        stopped = None
    except BudgetExceeded as exc:
        stopped = str(exc).splitlines()[0]
    fresh = dataclasses.replace(used, max_tool_calls=5)
    return [
        dataclasses.is_dataclass(template),
        repr(template),
        template == RunBudget(max_tool_calls=1),
        stopped,
        fresh.max_tool_calls,
    ]


def _literal(answer: str, repair: bool) -> object:
    model = ScriptedProvider([text(answer), text(answer)])
    agent = Agent("a", model=model, output_type=Literal["yes", "no"], output_repair=repair)
    try:
        result = Runner.run_sync(agent, "Is the sky blue?")
        return ["ok", result.output, result.turns]
    except OutputValidationError as exc:
        return ["refused", exc.output_type_name, len(model.calls)]


@check("literal_json_string")
def _():
    # the output contract asks for one JSON document: for a Literal of strings, "yes"
    return [_literal('"yes"', True), _literal('"yes"', False)]


@check("literal_bare_word")
def _():
    return [_literal("yes", False)]


print(json.dumps(RESULTS, sort_keys=True))
