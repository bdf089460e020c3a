"""Tool output: truncation caps, result renderers, JSON rendering of rich values."""

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


import datetime
from dataclasses import dataclass

from lovia import Agent, Runner, events, tool
from lovia.testing import ScriptedProvider, batch, text


@dataclass
class Row:
    name: str
    when: datetime.date


@tool(max_output_chars=100)
def huge() -> str:
    """Huge."""
    return "H" * 1000


@tool
def rows() -> list:
    """Rows."""
    return [Row("a", datetime.date(2024, 1, 2))]


@tool(result_renderer=lambda value, ctx: f"{len(value)} item(s)")
def items() -> list:
    """Items."""
    return [1, 2, 3]


@tool
def plain() -> dict:
    """Plain."""
    return {"b": 1, "a": [1, 2]}


def run(agent_kw=None):
    agent_kw = agent_kw or {}
    agent = Agent(
        name="a",
        model=ScriptedProvider(
            [
                batch(
                    ("huge", {}, "c1"), ("rows", {}, "c2"), ("items", {}, "c3"), ("plain", {}, "c4")
                ),
                text("ok"),
            ]
        ),
        tools=[huge, rows, items, plain],
        **agent_kw,
    )

    async def main():
        raw = {}
        handle = Runner.stream(agent, "go")
        async for ev in handle:
            if isinstance(ev, events.ToolCallCompleted):
                raw[ev.call.id] = type(ev.result).__name__
        r = await handle
        res = {e.call_id: e for e in r.entries if e.type == "tool_result"}
        return {
            "huge": [len(res["c1"].output) < 1000, res["c1"].output[:5], res["c1"].raw is None],
            "rows": res["c2"].output,
            "items": res["c3"].output,
            "plain": res["c4"].output,
            "raw_types": raw,
        }

    return main()


@check("default")
def _():
    return run()


@check("agent_renderer")
def _():
    return run({"tool_result_renderer": lambda value, ctx: "agent-rendered"})


@check("agent_cap")
def _():
    async def main():
        out = await run({"max_tool_output_chars": 20})
        plain = out["plain"]
        return [
            plain.startswith('{"b": 1'),
            plain != '{"b": 1, "a": [1, 2]}',
            out["items"],
            out["huge"][0],
        ]

    return main()


print(json.dumps(RESULTS, sort_keys=True))
