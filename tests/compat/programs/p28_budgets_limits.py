"""RunBudget and max_turns: which limit ends the run, and with what."""

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


from lovia import Agent, BudgetExceeded, LoviaError, MaxTurnsExceeded, Runner, tool
from lovia.testing import ScriptedProvider, batch, call, text

ran = []


@tool
def work(n: int) -> str:
    """Work."""
    ran.append(n)
    return "ok"


def go(script, **kw):
    ran.clear()
    try:
        r = Runner.run_sync(
            Agent(name="bot", model=ScriptedProvider(script), tools=[work]), "go", **kw
        )
        return ["ok", r.output, list(ran)]
    except LoviaError as exc:
        return [type(exc).__name__, isinstance(exc, LoviaError), list(ran)]


@check("max_tool_calls")
def _():
    from lovia import RunBudget

    return go(
        [batch(("work", {"n": 1}), ("work", {"n": 2})), text("done")],
        budget=RunBudget(max_tool_calls=1),
    )


@check("max_total_tokens")
def _():
    from lovia import RunBudget

    return go(
        [call("work", {"n": 1}), call("work", {"n": 2}), text("done")],
        budget=RunBudget(max_total_tokens=3),
    )


@check("max_turns")
def _():
    return go([call("work", {"n": 1}), call("work", {"n": 2}), text("done")], max_turns=2)


@check("within_budget")
def _():
    from lovia import RunBudget

    return go(
        [call("work", {"n": 1}), text("done")], budget=RunBudget(max_tool_calls=5, max_seconds=60)
    )


@check("budget_fields")
def _():
    from lovia import RunBudget

    b = RunBudget(max_tool_calls=20, max_seconds=60)
    return [
        b.max_input_tokens,
        b.max_output_tokens,
        b.max_total_tokens,
        b.max_tool_calls,
        b.max_seconds,
    ]


@check("classes")
def _():
    return [issubclass(BudgetExceeded, LoviaError), issubclass(MaxTurnsExceeded, LoviaError)]


print(json.dumps(RESULTS, sort_keys=True))
