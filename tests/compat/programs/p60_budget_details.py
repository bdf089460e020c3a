"""RunBudget details: rejected calls count, new dispatches stop, finished work is kept."""

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


from lovia import Agent, BudgetExceeded, CheckpointOptions, InMemoryCheckpointer, Runner, tool
from lovia.testing import ScriptedProvider, batch, call, text

ran = []


@tool
def work(n: int) -> str:
    """Work."""
    ran.append(n)
    return f"did {n}"


def budget(**kw):
    from lovia import RunBudget

    return RunBudget(**kw)


@check("rejected_calls_count")
def _():
    ran.clear()
    script = [
        batch(("nosuch", {}, "x1"), ("work", {"n": 1}, "w1"), ("work", {"n": 2}, "w2")),
        text("done"),
    ]
    try:
        Runner.run_sync(
            Agent(name="a", model=ScriptedProvider(script), tools=[work]),
            "go",
            budget=budget(max_tool_calls=2),
        )
        return ["completed", list(ran)]
    except BudgetExceeded:
        return ["BudgetExceeded", list(ran)]


@check("finished_work_is_checkpointed")
def _():
    async def main():
        ran.clear()
        cp = InMemoryCheckpointer()
        script = [
            call("work", {"n": 1}, call_id="w1"),
            call("work", {"n": 2}, call_id="w2"),
            text("done"),
        ]
        try:
            await Runner.run(
                Agent(name="a", model=ScriptedProvider(script), tools=[work]),
                "go",
                budget=budget(max_tool_calls=1),
                checkpoint=CheckpointOptions(cp, "b1"),
            )
            outcome = "completed"
        except BudgetExceeded:
            outcome = "BudgetExceeded"
        snap = await cp.load("b1")
        return [
            outcome,
            list(ran),
            snap.status,
            [[e.type, getattr(e, "call_id", None)] for e in snap.entries],
        ]

    return main()


@check("sub_run_budget_is_a_tool_error")
def _():
    ran.clear()
    helper = Agent(
        name="helper",
        model=ScriptedProvider([call("work", {"n": 9}), call("work", {"n": 10}), text("never")]),
        tools=[work],
    )
    t = helper.as_tool(budget=budget(max_tool_calls=1))
    parent = Agent(
        name="boss",
        model=ScriptedProvider([call(t.name, {"input": "do it"}, call_id="d1"), text("handled")]),
        tools=[t],
    )
    r = Runner.run_sync(parent, "go")
    return [
        r.output,
        [[e.is_error, e.output.split(":")[0]] for e in r.entries if e.type == "tool_result"],
        list(ran),
    ]


print(json.dumps(RESULTS, sort_keys=True))
