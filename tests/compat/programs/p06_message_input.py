"""Opening a run with a list of Message values (system + user)."""

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


from lovia import Agent, Runner, system, user
from lovia.testing import ScriptedProvider, text

provider = ScriptedProvider([text("Arr, west!")])


@check("run")
def _():
    agent = Agent(name="pirate", instructions="You are helpful.", model=provider)
    result = Runner.run_sync(agent, [system("Answer as a pirate."), user("Where do we sail?")])
    return {
        "output": result.output,
        "entries": [[e.type, getattr(e, "role", None), e.content] for e in result.entries],
        "seen": [[m.role, m.content] for m in provider.calls[0]],
    }


@check("input_types")
def _():
    from lovia import Message

    return [type(system("a")).__name__, isinstance(user("b"), Message)]


print(json.dumps(RESULTS, sort_keys=True))
