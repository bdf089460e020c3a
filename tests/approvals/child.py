"""A worker process for the approval tests: ``park DB``, ``decide DB yes|no``, ``resume DB``;
``ask-and-die DB`` streams the run and is SIGKILLed while the call waits for its consumer's
decision, ``repark DB`` resumes that run with a handler that parks it.

The tool appends a line to ``DB.paid`` each time it really runs, so the test can count
executions across processes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    approvals,
    events,
    tool,
)
from lovia.testing import ScriptedProvider, call, text

DB = Path(sys.argv[2])


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    with open(f"{DB}.paid", "a") as f:
        f.write(f"{amount}\n")
    return f"paid {amount}"


async def main() -> int:
    cp = SQLiteCheckpointer(DB)
    try:
        if sys.argv[1] == "park":
            agent = Agent(
                "payer",
                model=ScriptedProvider([call("pay", {"amount": 7})]),
                tools=[pay],
                approval_handler=lambda c, ctx: "defer",
            )
            try:
                await Runner.run(agent, "pay 7", checkpoint=CheckpointOptions(cp, "job-1"))
            except ApprovalPending as exc:
                print("parked", [c.name for c in exc.calls])
                return 3
            return 1
        if sys.argv[1] == "ask-and-die":
            agent = Agent(
                "payer", model=ScriptedProvider([call("pay", {"amount": 7})]), tools=[pay]
            )
            handle = Runner.stream(agent, "pay 7", checkpoint=CheckpointOptions(cp, "job-1"))
            async for event in handle:
                if isinstance(event, events.ApprovalRequired):  # a person is still reading it
                    os.kill(os.getpid(), signal.SIGKILL)
            return 1
        if sys.argv[1] == "repark":
            agent = Agent(
                "payer",
                model=ScriptedProvider([]),  # the call is in the checkpoint: no model call
                tools=[pay],
                approval_handler=lambda c, ctx: "defer",
            )
            try:
                await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "job-1"))
            except ApprovalPending as exc:
                print("parked", [c.name for c in exc.calls])
                return 3
            return 1
        if sys.argv[1] == "decide":
            calls = await approvals.pending(cp, "job-1")
            await approvals.decide(cp, "job-1", {calls[0].id: sys.argv[3] == "yes"}, "policy")
            return 0
        agent = Agent("payer", model=ScriptedProvider([text("all done")]), tools=[pay])
        result = await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "job-1"))
        print("output", result.output)
        return 0
    finally:
        await cp.close()


sys.exit(asyncio.run(main()))
