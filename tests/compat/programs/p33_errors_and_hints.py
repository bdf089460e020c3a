"""The exception family, hints, and the misuse errors a new user hits first."""

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


import lovia
from lovia import Agent, Runner
from lovia.testing import ScriptedProvider, text

NAMES = [
    "UserError",
    "ProviderError",
    "ContextOverflowError",
    "ToolError",
    "InvalidToolArguments",
    "OutputValidationError",
    "MaxTurnsExceeded",
    "BudgetExceeded",
    "RunCancelled",
    "GuardrailTripped",
    "MCPError",
]


@check("hierarchy")
def _():
    return {
        n: [
            hasattr(lovia, n),
            hasattr(lovia, n) and issubclass(getattr(lovia, n), lovia.LoviaError),
        ]
        for n in NAMES
    }


@check("exceptions_module")
def _():
    import lovia.exceptions as ex

    return {n: getattr(ex, n, None) is getattr(lovia, n, object()) for n in [*NAMES, "LoviaError"]}


@check("hint_attribute")
def _():
    e = lovia.UserError("bad config", hint="set model=")
    e2 = lovia.ToolError("nope")
    return [e.hint, str(e).splitlines()[0], e2.hint, isinstance(e, Exception)]


@check("run_sync_inside_loop")
def _():
    async def main():
        try:
            Runner.run_sync(Agent(name="a", model=ScriptedProvider([text("x")])), "hi")
            return "ran"
        except lovia.UserError as exc:
            return ["UserError", bool(exc.hint)]

    return main()


@check("provider_error_fields")
def _():
    e = lovia.ProviderError("boom", vendor="openai", model="m", status_code=429, retryable=True)
    return [e.vendor, e.model, e.status_code, e.retryable]


@check("output_validation_error_fields")
def _():
    from pydantic import BaseModel

    class Brief(BaseModel):
        title: str

    agent = Agent(
        name="a",
        model=ScriptedProvider([text("not json"), text("still not json")]),
        output_type=Brief,
    )
    try:
        Runner.run_sync(agent, "go")
        return "ok"
    except lovia.OutputValidationError as exc:
        return [exc.raw, exc.output_type_name]


@check("script_runs_dry")
def _():
    try:
        Runner.run_sync(Agent(name="a", model=ScriptedProvider([])), "hi")
        return "ran"
    except AssertionError as exc:
        return ["AssertionError", str(exc)]


print(json.dumps(RESULTS, sort_keys=True))
