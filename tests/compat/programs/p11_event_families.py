"""Filtering events by base class (RunEvent, ToolEvent, ...)."""

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


from lovia import Agent, Runner, events, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@check("families")
def _():
    async def main():
        fams = [
            "Event",
            "RunEvent",
            "TurnEvent",
            "DeltaEvent",
            "MessageEvent",
            "ToolEvent",
            "TransitionEvent",
            "ErrorEvent",
            "ContextEvent",
        ]
        classes = [getattr(events, f) for f in fams]
        agent = Agent(
            name="calc",
            model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]),
            tools=[add],
        )
        seen = {}
        async for ev in Runner.stream(agent, "go"):
            seen[type(ev).__name__] = [
                f for f, c in zip(fams, classes, strict=True) if isinstance(ev, c)
            ]
        return seen

    return main()


@check("catalog")
def _():
    names = [
        "RunStarted",
        "TurnStarted",
        "TurnEnded",
        "RunCompleted",
        "RunFailed",
        "TextDelta",
        "ReasoningDelta",
        "OutputDiscarded",
        "ModelRetrying",
        "MessageCompleted",
        "UserMessageInjected",
        "ToolCallStarted",
        "ToolCallCompleted",
        "ToolCallFailed",
        "ApprovalRequired",
        "HandoffOccurred",
        "ContextCompacted",
    ]
    return {n: hasattr(events, n) for n in names}


@check("events_in_all")
def _():
    import lovia

    return ["events" in lovia.__all__, "Message" in lovia.__all__]


print(json.dumps(RESULTS, sort_keys=True))
