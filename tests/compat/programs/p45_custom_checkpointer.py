"""A user's own Checkpointer (append/load/delete) behind the runner: run, replay, delete."""

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


from lovia import Agent, CheckpointOptions, Runner, RunSnapshot, tool
from lovia.testing import ScriptedProvider, call, text


class DictCheckpointer:
    def __init__(self):
        self.entries = {}
        self.heads = {}
        self.log = []

    async def append(self, run_id, entries, head):
        self.log.append([len(entries), head.status, head.turns, head.agent_name])
        self.entries.setdefault(run_id, []).extend(entries)
        self.heads[run_id] = head

    async def load(self, run_id):
        if run_id not in self.heads:
            return None
        return RunSnapshot.from_parts(run_id, list(self.entries[run_id]), self.heads[run_id])

    async def delete(self, run_id):
        self.log.append(["delete"])
        self.entries.pop(run_id, None)
        self.heads.pop(run_id, None)


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


cp = DictCheckpointer()


@check("run")
def _():
    r = Runner.run_sync(
        Agent(
            name="calc",
            model=ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")]),
            tools=[add],
        ),
        "1+2",
        checkpoint=CheckpointOptions(cp, "j1"),
    )
    statuses = []
    for item in cp.log:
        if item[1] not in statuses:
            statuses.append(item[1])
    final = cp.heads["j1"]
    return [
        r.output,
        statuses,
        [final.status, final.turns, final.agent_name, final.output],
        [e.type for e in cp.entries["j1"]],
    ]


@check("replay")
def _():
    p = ScriptedProvider([])
    r = Runner.run_sync(
        Agent(name="calc", model=p, tools=[add]), "again", checkpoint=CheckpointOptions(cp, "j1")
    )
    return [r.output, r.turns, len(p.calls)]


@check("delete_on_success")
def _():
    cp.log.clear()
    r = Runner.run_sync(
        Agent(name="calc", model=ScriptedProvider([text("x")])),
        "q",
        checkpoint=CheckpointOptions(cp, "j2", delete_on_success=True),
    )
    return [r.output, cp.log[-1], "j2" in cp.heads]


print(json.dumps(RESULTS, sort_keys=True))
