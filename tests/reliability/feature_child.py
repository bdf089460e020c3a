"""A run using one feature, killed (SIGKILL) in a model call, then resumed in a new process.

    python feature_child.py DB budget|budget_tool|mailbox crash|resume

``budget``: ``RunBudget(max_tool_calls=3)``; the model asks for ``step`` 1, 2, 3, 4 one per
turn. ``crash`` dies in the third model call (two calls done); ``resume`` runs with a fresh
budget of the same limits. ``budget_tool``: the same, but ``crash`` dies inside step 2, which
the resume runs again (at least once). ``mailbox``: ``step`` 1 pushes a message into the
run's mailbox, which the next turn injects; ``crash`` dies in that turn's model call;
``resume`` answers with how many copies of the message its prompt holds.

Each ``step`` execution is appended to ``DB.steps``. Prints JSON ``output`` / ``error``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

from lovia import (
    Agent,
    BudgetExceeded,
    CheckpointOptions,
    Mailbox,
    RunBudget,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    tool,
)
from lovia.messages import AssistantTurn, Message, ToolCall
from lovia.usage import Usage

NOTE = "also check the invoice"
USAGE = Usage(input_tokens=10, output_tokens=5)


def main(db: str, mode: str, phase: str) -> int:
    mailbox = Mailbox()

    @tool(parallel=False)
    def step(n: int) -> str:
        """Do step n."""
        with open(f"{db}.steps", "a") as f:
            f.write(f"{n}\n")
        if mode == "mailbox" and n == 1:
            mailbox.push(NOTE)  # a message arriving while the run goes on
        if mode == "budget_tool" and phase == "crash" and n == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # step 2 took effect; its result is not saved
        return f"step {n} done"

    def model(messages: list[Message]) -> AssistantTurn:
        done = sum(m.role == "tool" for m in messages)
        notes = sum(m.role == "user" and m.content == NOTE for m in messages)
        if phase == "crash" and ((mode == "budget" and done == 2) or (mode == "mailbox" and notes)):
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "mailbox" and done >= 1:
            return AssistantTurn(content=f"saw {notes} notes", usage=USAGE)
        if done < 4:
            args = json.dumps({"n": done + 1})
            return AssistantTurn(
                content=None,
                tool_calls=[ToolCall(id=f"s{done + 1}", name="step", arguments=args)],
                usage=USAGE,
            )
        return AssistantTurn(content="all steps done", usage=USAGE)

    from lovia.testing import ScriptedProvider

    agent = Agent("worker", model=ScriptedProvider([model] * 10), tools=[step])

    async def run() -> dict[str, Any]:
        async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:
            try:
                result = await Runner.run(
                    agent,
                    "do the steps",
                    session=session,
                    session_id="s",
                    checkpoint=CheckpointOptions(cp, "job-1"),
                    budget=RunBudget(max_tool_calls=3),
                    mailbox=mailbox,
                )
            except BudgetExceeded as exc:
                return {"output": None, "error": f"BudgetExceeded: {exc}"}
            return {"output": result.output, "error": None}

    print(json.dumps(asyncio.run(run())))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
