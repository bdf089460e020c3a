"""The agent a chaos trial runs in a child process, killing itself at one chosen point.

    python child.py DB LOGDIR ATTEMPT [--wal] [--prefix P] [--kill KIND:N] [--restart]

The agent is small but has every step the loop knows: three parallel tool calls (one a sync
tool on a thread), a handoff, a charge that must take effect once (``on_resume`` checks the
ledger, as a payment provider would be asked), two more parallel calls, and a final answer
built from every tool output it saw. Session and checkpoint share one SQLite file, or one
PostgreSQL database when DB is a ``postgresql://`` DSN (tables under ``--prefix``).

``--kill KIND:N`` SIGKILLs the process at the N-th occurrence (in this process) of KIND:
``cp_before`` / ``cp_after`` (a checkpoint save), ``sess_before`` / ``sess_after`` (the
session append), ``tool_start`` / ``tool_end`` (inside a tool, before and after its effect),
``model`` (inside a model call), ``lease`` (just after taking the run's lease), and
``turn_saved`` (right after saving a model turn that asks for tools; not one of the harness's
random points). It prints the output, how often each point was passed and whether the run
was a replay, as JSON. ``--restart`` re-submits wrongly
(``if_run_exists="restart"``), to show the harness sees it.
Every tool execution and every charge effect is appended to a log file and fsync'ed before
the tool goes on, so the parent sees them even when the kill follows at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from lovia import (
    Agent,
    CheckpointOptions,
    RunContext,
    RunHead,
    Runner,
    RunSnapshot,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCallEntry,
    TranscriptEntry,
    tool,
)
from lovia.messages import AssistantTurn, Message, ToolCall
from lovia.stores.checkpoint import IfRunExists
from lovia.testing import ScriptedProvider

if __name__ == "__main__":  # run as a script: the repository root, for tests.faults
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.faults import FaultySession

RUN_ID = "chaos-run"
SESSION_ID = "chaos-session"
VIOLATION_EXIT = 3  # the provider was sent a tool call without its result


class Points:
    """Counts the kill points passed in this process and kills at the chosen one."""

    def __init__(self, kill: str | None) -> None:
        self.kind, self.n = (None, 0)
        if kill:
            kind, n = kill.split(":")
            self.kind, self.n = kind, int(n)
        self.counts: dict[str, int] = {}

    def passed(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == self.kind and self.counts[kind] == self.n:
            os.kill(os.getpid(), signal.SIGKILL)


class Log:
    """Append-only line log, each line on disk before ``write`` returns."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, line: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def lines(self) -> list[str]:
        if not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as f:
            return f.read().splitlines()


class KillingCheckpointer:
    """Wraps a checkpointer: a kill point before and after every save."""

    def __init__(self, inner: Any, points: Points) -> None:
        self.inner = inner
        self.points = points

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        self.points.passed("cp_before")
        await self.inner.append(run_id, entries, head)
        self.points.passed("cp_after")
        if any(isinstance(e, ToolCallEntry) for e in entries):
            self.points.passed("turn_saved")  # a model turn that asks for tools is saved

    async def load(self, run_id: str) -> RunSnapshot | None:
        snap: RunSnapshot | None = await self.inner.load(run_id)
        return snap

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)

    # the run lease passes through, so every attempt also takes over a killed one's lease
    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        taken = bool(await self.inner.acquire_lease(run_id, owner, ttl))
        if taken:
            self.points.passed("lease")  # holding the lease, nothing loaded yet
        return taken

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        return bool(await self.inner.renew_lease(run_id, owner, ttl))

    async def release_lease(self, run_id: str, owner: str) -> None:
        await self.inner.release_lease(run_id, owner)

    async def lease_holder(self, run_id: str) -> str | None:
        holder = await self.inner.lease_holder(run_id)
        return None if holder is None else str(holder)


def tool_output(name: str, arg: str) -> str:
    return f"{name}({arg})=" + str(sum(map(ord, name + arg)) % 997)


def build_agent(points: Points, executions: Log, ledger: Log, attempt: int) -> Agent:
    def executed(call_id: str, name: str) -> None:
        executions.write(f"{attempt} {call_id} {name}")
        points.passed("tool_start")

    @tool
    async def lookup(ctx: RunContext[Any], key: str) -> str:
        """Look a key up."""
        executed(_call_id(ctx, "lookup", key), "lookup")
        await asyncio.sleep(0)
        points.passed("tool_end")
        return tool_output("lookup", key)

    @tool
    def weather(city: str) -> str:
        """The weather in a city (a sync tool, so it runs on a thread)."""
        executed(f"w-{city}", "weather")
        points.passed("tool_end")
        return tool_output("weather", city)

    def charged(call: ToolCallEntry, ctx: RunContext[Any]) -> str:
        # ask "the payment provider" (the ledger) whether the charge went through
        for line in ledger.lines():
            if line == call.call_id:
                return tool_output("charge", json.loads(call.arguments)["amount"])
        return "rerun"

    @tool(parallel=False, on_resume=charged)
    async def charge(amount: str) -> str:
        """Charge an amount once."""
        executed("c-charge", "charge")
        ledger.write("c-charge")
        await asyncio.sleep(0)
        points.passed("tool_end")
        return tool_output("charge", amount)

    @tool
    async def compute(x: str) -> str:
        """Compute something."""
        executed("c-compute", "compute")
        await asyncio.sleep(0)
        points.passed("tool_end")
        return tool_output("compute", x)

    model = ScriptedProvider([Script(points)] * 20)
    specialist = Agent(
        "specialist",
        instructions="Finish the job.",
        model=model,
        tools=[lookup, charge, compute],
    )
    return Agent(
        "triage",
        instructions="Gather facts, then hand over.",
        model=model,
        tools=[lookup, weather],
        handoffs=[specialist],
    )


def _call_id(ctx: RunContext[Any], name: str, key: str) -> str:
    """The call id of this execution, found in the live transcript by its arguments."""
    for e in reversed(list(ctx.entries)):
        if (
            isinstance(e, ToolCallEntry)
            and e.name == name
            and json.loads(e.arguments) == {"key": key}
        ):
            return e.call_id
    return f"?-{key}"


def _turn(*calls: tuple[str, dict[str, str], str], text: str | None = None) -> AssistantTurn:
    tool_calls = [
        ToolCall(id=cid, name=name, arguments=json.dumps(args)) for name, args, cid in calls
    ]
    return AssistantTurn(content=text, tool_calls=tool_calls)


class Script:
    """The model: decides the next turn from which results the prompt already holds."""

    def __init__(self, points: Points) -> None:
        self.points = points

    def __call__(self, messages: list[Message]) -> AssistantTurn:
        self.points.passed("model")
        check_well_formed(messages)
        results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
        if "l-a" not in results:
            return _turn(
                ("lookup", {"key": "a"}, "l-a"),
                ("lookup", {"key": "b"}, "l-b"),
                ("weather", {"city": "oslo"}, "w-oslo"),
                text="Looking things up.",
            )
        if "h-spec" not in results:
            return _turn(("transfer_to_specialist", {}, "h-spec"))
        if "c-charge" not in results:
            return _turn(("charge", {"amount": "12.50"}, "c-charge"))
        if "c-compute" not in results:
            return _turn(("compute", {"x": "7"}, "c-compute"), ("lookup", {"key": "c"}, "l-c"))
        order = ["l-a", "l-b", "w-oslo", "h-spec", "c-charge", "c-compute", "l-c"]
        return AssistantTurn(content="done: " + "; ".join(str(results[c]) for c in order))


def check_well_formed(messages: list[Message]) -> None:
    """Exit with VIOLATION_EXIT if a tool call reached the model without its result."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    for m in messages:
        for c in m.tool_calls or ():
            if c.id not in answered:
                sys.stderr.write(f"the provider was sent call {c.id} without its result\n")
                sys.stderr.flush()
                os._exit(VIOLATION_EXIT)


@asynccontextmanager
async def open_stores(db: str, *, wal: bool, prefix: str) -> AsyncIterator[tuple[Any, Any]]:
    """A session and a checkpointer on one SQLite file or one PostgreSQL database."""
    if db.startswith("postgresql://"):
        from lovia import PostgresCheckpointer, PostgresSession

        async with (
            PostgresSession(db, table_prefix=prefix) as session,
            PostgresCheckpointer(db, table_prefix=prefix) as cp,
        ):
            yield session, cp
        return
    async with SQLiteSession(db, wal=wal) as session, SQLiteCheckpointer(db, wal=wal) as cp:
        yield session, cp


async def main(argv: list[str]) -> int:
    db, logdir, attempt = argv[0], argv[1], int(argv[2])
    kill = argv[argv.index("--kill") + 1] if "--kill" in argv else None
    wal = "--wal" in argv
    # --restart: a deliberately wrong re-submission, so the harness can show it notices one
    policy: IfRunExists = "restart" if "--restart" in argv else "resume"
    points = Points(kill)
    executions = Log(os.path.join(logdir, "executions.log"))
    ledger = Log(os.path.join(logdir, "ledger.log"))
    agent = build_agent(points, executions, ledger, attempt)
    prefix = argv[argv.index("--prefix") + 1] if "--prefix" in argv else "lovia_"
    async with open_stores(db, wal=wal, prefix=prefix) as (session, cp):
        result = await Runner.run(
            agent,
            "Plan the trip and pay for it.",
            session=FaultySession(
                session,
                before=lambda _: points.passed("sess_before"),
                after=lambda _: points.passed("sess_after"),
            ),
            session_id=SESSION_ID,
            checkpoint=CheckpointOptions(
                KillingCheckpointer(cp, points), RUN_ID, if_run_exists=policy
            ),
        )
    report = {"output": result.output, "counts": points.counts, "replayed": result.replayed}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
