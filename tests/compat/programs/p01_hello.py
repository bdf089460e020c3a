"""A first agent answers from a scripted model; the result's fields."""

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


from lovia import Agent, Runner
from lovia.testing import ScriptedProvider, text


@check("result")
def _():
    agent = Agent(name="bot", instructions="Be terse.", model=ScriptedProvider([text("Hello!")]))
    result = Runner.run_sync(agent, "hi")
    return {
        "output": result.output,
        "turns": result.turns,
        "finish_reason": result.finish_reason,
        "final_agent": result.final_agent.name,
        "usage": [
            result.usage.input_tokens,
            result.usage.output_tokens,
            result.usage.total_tokens,
            result.usage.cache_read_tokens,
            result.usage.cache_write_tokens,
        ],
        "entry_types": [type(e).__name__ for e in result.entries],
        "entries": [
            [getattr(e, "type", None), getattr(e, "role", None), e.content] for e in result.entries
        ],
    }


@check("agent_methods")
def _():
    async def main():
        agent = Agent(name="bot", model=ScriptedProvider([text("a")]))
        r1 = await agent.run("x")
        agent2 = agent.clone(model=ScriptedProvider([text("b")]))
        r2 = await agent2.run("y")
        return [r1.output, r2.output, agent2.name]

    return main()


@check("no_model")
def _():
    try:
        Runner.run_sync(Agent(name="bot"), "hi")
    except Exception as exc:
        return [type(exc).__name__, bool(getattr(exc, "hint", None))]
    return "no error"


print(json.dumps(RESULTS, sort_keys=True))
