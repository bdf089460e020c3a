"""Tool arguments: Pydantic models, dataclasses, literals, coercion, sync tools off the loop."""

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


import threading
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from lovia import Agent, Runner, tool
from lovia.testing import ScriptedProvider, call, text

got = {}


class Address(BaseModel):
    city: str
    zip: str


@dataclass
class Window:
    start: int
    end: int


@tool
async def ship(
    to: Address, speed: Literal["slow", "fast"] = "slow", window: Window | None = None, qty: int = 1
) -> str:
    """Ship a parcel."""
    got["ship"] = [
        type(to).__name__,
        to.city,
        speed,
        type(window).__name__,
        qty,
        type(qty).__name__,
    ]
    return "shipped"


@tool
def where() -> str:
    """Which thread runs sync tools."""
    got["thread"] = threading.current_thread() is threading.main_thread()
    return "here"


@check("coerced")
def _():
    script = [
        call(
            "ship",
            {
                "to": {"city": "Oslo", "zip": "0150"},
                "speed": "fast",
                "window": {"start": 1, "end": 2},
                "qty": "3",
            },
        ),
        text("ok"),
    ]
    r = Runner.run_sync(Agent(name="a", model=ScriptedProvider(script), tools=[ship]), "go")
    return [r.output, got.get("ship"), [e.is_error for e in r.entries if e.type == "tool_result"]]


@check("literal_rejected")
def _():
    script = [call("ship", {"to": {"city": "Oslo", "zip": "1"}, "speed": "warp"}), text("ok")]
    r = Runner.run_sync(Agent(name="a", model=ScriptedProvider(script), tools=[ship]), "go")
    return [[e.is_error, e.output.split(":")[0]] for e in r.entries if e.type == "tool_result"]


@check("schema")
def _():
    p = ship.parameters
    return [
        sorted(p["properties"]),
        sorted(p.get("required", [])),
        p["properties"]["speed"].get("enum"),
        p["properties"]["qty"].get("default"),
    ]


@check("sync_tool_off_loop")
def _():
    Runner.run_sync(
        Agent(name="a", model=ScriptedProvider([call("where", {}), text("ok")]), tools=[where]),
        "go",
    )
    return got.get("thread")


print(json.dumps(RESULTS, sort_keys=True))
