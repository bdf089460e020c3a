"""Agent-as-tool: a delegated sub-run answers as a tool result."""

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


from lovia import Agent, Runner, events
from lovia.testing import ScriptedProvider, call, text


@check("delegation")
def _():
    async def main():
        sub_provider = ScriptedProvider([text("- a\n- b")])
        summarizer = Agent(name="summarizer", instructions="Summarize.", model=sub_provider)
        t = summarizer.as_tool(description="Summarize a passage.")
        manager_provider = ScriptedProvider(
            [call(t.name, {"input": "long text"}, call_id="d1"), text("Here you go.")]
        )
        manager = Agent(name="manager", model=manager_provider, tools=[t])
        handle = Runner.stream(manager, "summarize this", session_id=None)
        started = [ev.call.name async for ev in handle if isinstance(ev, events.ToolCallStarted)]
        r = await handle
        return {
            "tool": [t.name, t.description, sorted(t.parameters.get("properties", {}))],
            "started": started,
            "output": r.output,
            "sub_saw": [[m.role, m.content] for m in sub_provider.calls[0]],
            "result": [e.output for e in r.entries if e.type == "tool_result"],
            "usage": r.usage.total_tokens,
        }

    return main()


@check("custom_name")
def _():
    a = Agent(name="Research Bot", model=ScriptedProvider([]))
    return [a.as_tool().name, a.as_tool(name="research").name]


print(json.dumps(RESULTS, sort_keys=True))
