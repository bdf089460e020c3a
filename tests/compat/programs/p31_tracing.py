"""Tracing with InMemoryTracer: span names and attributes of a run with a tool and a handoff."""

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
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@check("spans")
def _():
    from lovia.tracing import InMemoryTracer

    tracer = InMemoryTracer()
    helper = Agent(name="helper", model=ScriptedProvider([text("3")]))
    agent = Agent(
        name="calc",
        model=ScriptedProvider(
            [
                call("add", {"a": 1, "b": 2}, call_id="c1"),
                call("transfer_to_helper", {}, call_id="h"),
            ]
        ),
        tools=[add],
        handoffs=[helper],
    )
    Runner.run_sync(agent, "1+2", tracer=tracer)
    out = []
    for s in tracer.spans:
        attrs = {k: v for k, v in s.attrs.items() if k != "run_id"}
        out.append([str(s.name), attrs, "run_id" in s.attrs, s.exception is None])
    return out


@check("tracer_classes")
def _():
    from lovia.tracing import ConsoleTracer, InMemoryTracer, NoopTracer, RecordedSpan

    with NoopTracer().span("x", a=1) as sp:
        sp.set_attribute("b", 2)
    t = InMemoryTracer()
    with t.span("custom", k="v") as sp:
        sp.set_attribute("extra", 1)
    return [
        type(ConsoleTracer(min_duration_ms=5)).__name__,
        [t.spans[0].name, t.spans[0].attrs],
        RecordedSpan.__name__,
    ]


print(json.dumps(RESULTS, sort_keys=True))
