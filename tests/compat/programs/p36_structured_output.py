"""output_type: a Pydantic model, a dataclass, repair after a bad answer."""

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

from pydantic import BaseModel

from lovia import Agent, OutputValidationError, Runner
from lovia.testing import ScriptedProvider, text


class Brief(BaseModel):
    title: str
    points: list[str]


@check("pydantic")
def _():
    provider = ScriptedProvider([text('{"title": "Tides", "points": ["moon", "sun"]}')])
    r = Runner.run_sync(Agent(name="w", model=provider, output_type=Brief), "brief me")
    sys0 = provider.calls[0][0]
    return [
        type(r.output).__name__,
        r.output.title,
        r.output.points,
        sys0.role,
        "title" in sys0.content,
    ]


@check("dataclass_run_override")
def _():
    @dataclass
    class Point:
        x: int
        y: int

    r = Runner.run_sync(
        Agent(name="w", model=ScriptedProvider([text('{"x": 1, "y": 2}')])), "pt", output_type=Point
    )
    return [type(r.output).__name__, r.output.x, r.output.y]


@check("repair")
def _():
    provider = ScriptedProvider([text("oops"), text('{"title": "T", "points": []}')])
    r = Runner.run_sync(Agent(name="w", model=provider, output_type=Brief), "brief me")
    return [
        r.output.title,
        r.turns,
        len(provider.calls),
        provider.calls[1][-2].content,
        provider.calls[1][-1].role,
    ]


@check("no_repair")
def _():
    try:
        Runner.run_sync(
            Agent(
                name="w",
                model=ScriptedProvider([text("oops")]),
                output_type=Brief,
                output_repair=False,
            ),
            "x",
        )
        return "ok"
    except OutputValidationError as exc:
        return ["OutputValidationError", exc.raw, exc.output_type_name]


@check("builtin_int")
def _():
    r = Runner.run_sync(Agent(name="w", model=ScriptedProvider([text("42")]), output_type=int), "n")
    return [r.output, type(r.output).__name__]


print(json.dumps(RESULTS, sort_keys=True))
