"""A worker process dies inside a tool; the next process resumes the run from SQLite. Another
dies after its final answer was saved, in the output guardrail that judges it."""

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


import os
import subprocess

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.testing import ScriptedProvider, batch, text


def worker():
    @tool
    def fetch(n: int) -> str:
        """Fetch."""
        return f"fetched {n}"

    @tool(parallel=False)
    def charge(amount: int) -> str:
        """Charge a card (the process dies here)."""
        with open("charges.log", "a") as f:
            f.write(f"{amount}\n")
        os._exit(3)

    agent = Agent(
        name="biller",
        model=ScriptedProvider(
            [batch(("fetch", {"n": 1}, "f1"), ("charge", {"amount": 5}, "c1")), text("never")]
        ),
        tools=[fetch, charge],
    )
    Runner.run_sync(
        agent,
        "bill it",
        checkpoint=CheckpointOptions(SQLiteCheckpointer("runs.db"), "bill-1"),
        session=SQLiteSession("chat.db"),
        session_id="u",
    )


def answering_worker():
    def judge(output, ctx):
        os._exit(3)  # the process dies judging the answer the model gave

    agent = Agent(
        name="writer", model=ScriptedProvider([text("Draft one.")]), output_guardrails=[judge]
    )
    Runner.run_sync(
        agent,
        "write it",
        checkpoint=CheckpointOptions(SQLiteCheckpointer("runs.db"), "write-1"),
        session=SQLiteSession("chat.db"),
        session_id="w",
    )


if len(sys.argv) > 1 and sys.argv[1] == "worker":
    worker()
    sys.exit(0)
if len(sys.argv) > 1 and sys.argv[1] == "answering_worker":
    answering_worker()
    sys.exit(0)


@check("crash")
def _():
    proc = subprocess.run([sys.executable, __file__, "worker"], capture_output=True, text=True)

    async def snap():
        s = await SQLiteCheckpointer("runs.db").load("bill-1")
        return [s.status, s.turns, [[e.type, getattr(e, "call_id", None)] for e in s.entries]]

    return [proc.returncode, asyncio.run(snap())]


@check("resume")
def _():
    executed = []

    @tool
    def fetch(n: int) -> str:
        """Fetch."""
        executed.append(["fetch", n])
        return f"fetched {n}"

    @tool(parallel=False)
    def charge(amount: int) -> str:
        """Charge a card."""
        executed.append(["charge", amount])
        return "charged"

    provider = ScriptedProvider([text("Billed.")])
    agent = Agent(name="biller", model=provider, tools=[fetch, charge])
    r = Runner.run_sync(
        agent,
        "bill it",
        checkpoint=CheckpointOptions(SQLiteCheckpointer("runs.db"), "bill-1"),
        session=SQLiteSession("chat.db"),
        session_id="u",
    )

    async def after():
        s = await SQLiteCheckpointer("runs.db").load("bill-1")
        return [s.status, len(await SQLiteSession("chat.db").segments("u"))]

    return {
        "output": r.output,
        "turns": r.turns,
        "executed": executed,
        "charges_log": open("charges.log").read().split(),
        "results": sorted([e.call_id, e.output] for e in r.entries if e.type == "tool_result"),
        "model_saw": [[m.role, m.tool_call_id, m.content] for m in provider.calls[0]],
        "after": asyncio.run(after()),
    }


@check("crash_after_answer")
def _():
    proc = subprocess.run(
        [sys.executable, __file__, "answering_worker"], capture_output=True, text=True
    )

    async def snap():
        s = await SQLiteCheckpointer("runs.db").load("write-1")
        return [s.status, s.turns, [e.type for e in s.entries]]

    return [proc.returncode, asyncio.run(snap())]


@check("resume_after_answer")
def _():
    judged = []
    provider = ScriptedProvider([text("Draft two.")])
    agent = Agent(
        name="writer",
        model=provider,
        output_guardrails=[lambda output, ctx: judged.append(output)],
    )
    r = Runner.run_sync(
        agent,
        "write it",
        checkpoint=CheckpointOptions(SQLiteCheckpointer("runs.db"), "write-1"),
        session=SQLiteSession("chat.db"),
        session_id="w",
    )

    async def kept():
        return [e.type for e in await SQLiteSession("chat.db").load("w")]

    return {
        "output": r.output,
        "model_calls": len(provider.calls),
        "judged": judged,
        "session": asyncio.run(kept()),
    }


print(json.dumps(RESULTS, sort_keys=True))
