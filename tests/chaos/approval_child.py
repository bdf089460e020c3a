"""One step of the approve-then-execute path in a child process, killing itself at one point.

    python approval_child.py DB LOGDIR ATTEMPT PHASE [--verdict yes|no] [--kill KIND:N]
                             [--prefix P] [--hold SECONDS] [--go FILE]

PHASE is ``park`` (start the run; the approval handler defers ``pay``), ``decide`` (record
``--verdict`` with ``lovia.approvals.decide``) or ``resume`` (run the same run id again; an
undecided call is deferred again). The model asks, in one turn, for ``note`` (n-1), ``pay``
(p-pay, needs approval, ``parallel=False``) and ``note`` (n-2), then answers with what ``pay``
returned. ``pay``'s effect is a line in ``LOGDIR/ledger.log``; its ``on_resume`` asks the
ledger whether the effect took place, as one asks a payment provider.

Kill points (``--kill KIND:N`` SIGKILLs at the N-th occurrence in this process): ``lease``,
``cp_before`` / ``cp_after`` (a checkpoint save), ``decide_before`` / ``decide_after`` (the
decision's head update), ``model``, ``pay_start`` / ``pay_end`` (before and after the
payment's effect), ``note_start`` / ``note_end``. ``--hold`` keeps the decision's head update
open that long (two deciders overlap); ``--go`` waits for that file before deciding.

Exit codes: 0 done (decided, or the run completed), 3 parked, 4 ``UserError``, 5 the model
was sent a tool call without its result. Prints JSON: ``counts`` of the points passed,
``output``, ``error``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    RunContext,
    RunHead,
    Runner,
    ToolCallEntry,
    UserError,
    approvals,
    tool,
)
from lovia.messages import AssistantTurn, Message, ToolCall
from lovia.testing import ScriptedProvider
from tests.chaos.child import KillingCheckpointer, Log, Points, open_stores

RUN_ID = "approval-run"
PARKED_EXIT, USER_ERROR_EXIT, VIOLATION_EXIT = 3, 4, 5
AMOUNT = 7


class DecidingCheckpointer(KillingCheckpointer):
    """Adds kill points around ``update_head`` (the decision's write), and an optional hold
    inside its transaction."""

    def __init__(self, inner: Any, points: Points, hold: float) -> None:
        super().__init__(inner, points)
        self.hold = hold

    async def update_head(
        self, run_id: str, fn: Callable[[RunHead], RunHead | None]
    ) -> RunHead | None:
        def held(head: RunHead) -> RunHead | None:
            if self.hold:
                time.sleep(self.hold)  # inside the store's transaction
            return fn(head)

        self.points.passed("decide_before")
        head: RunHead | None = await self.inner.update_head(run_id, held)
        self.points.passed("decide_after")
        return head


class Script:
    """The model: one turn asking for n-1, p-pay, n-2; then the answer."""

    def __init__(self, points: Points) -> None:
        self.points = points

    def __call__(self, messages: list[Message]) -> AssistantTurn:
        self.points.passed("model")
        answered = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
        for m in messages:
            for c in m.tool_calls or ():
                if c.id not in answered:
                    sys.stderr.write(f"the model was sent call {c.id} without its result\n")
                    sys.stderr.flush()
                    os._exit(VIOLATION_EXIT)
        if "p-pay" not in answered:
            return AssistantTurn(
                content=None,
                tool_calls=[
                    ToolCall(id="n-1", name="note", arguments='{"text": "before"}'),
                    ToolCall(id="p-pay", name="pay", arguments=json.dumps({"amount": AMOUNT})),
                    ToolCall(id="n-2", name="note", arguments='{"text": "after"}'),
                ],
            )
        return AssistantTurn(content=f"done: {answered['p-pay']}")


def build_agent(points: Points, logdir: str, label: str) -> Agent:
    executions = Log(os.path.join(logdir, "executions.log"))
    ledger = Log(os.path.join(logdir, "ledger.log"))

    @tool
    async def note(ctx: RunContext[Any], text: str) -> str:
        """Write a note."""
        call_id = "n-1" if text == "before" else "n-2"
        points.passed("note_start")
        executions.write(f"{label} {call_id}")
        await asyncio.sleep(0)
        points.passed("note_end")
        return f"noted {text}"

    def paid_already(call: ToolCallEntry, ctx: RunContext[Any]) -> str:
        # ask "the payment provider" whether this call's payment went through
        return f"paid {AMOUNT}" if call.call_id in ledger.lines() else "rerun"

    @tool(needs_approval=True, parallel=False, on_resume=paid_already)
    async def pay(amount: int) -> str:
        """Pay an amount."""
        points.passed("pay_start")
        executions.write(f"{label} p-pay")
        ledger.write("p-pay")
        await asyncio.sleep(0)
        points.passed("pay_end")
        return f"paid {amount}"

    return Agent(
        "payer",
        model=ScriptedProvider([Script(points)] * 10),
        tools=[note, pay],
        approval_handler=lambda call, ctx: "defer",
    )


def wait_for(go: str, verdict: str | None) -> None:
    """Say this decider is ready (its stores open), then wait for the go file."""
    Path(f"{go}.{verdict}").touch()
    while not os.path.exists(go):
        time.sleep(0.005)


def option(argv: list[str], name: str, default: str | None = None) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else default


async def main(argv: list[str]) -> int:
    db, logdir, attempt, phase = argv[0], argv[1], argv[2], argv[3]
    points = Points(option(argv, "--kill"))
    prefix = option(argv, "--prefix", "lovia_") or "lovia_"
    hold = float(option(argv, "--hold", "0") or 0)
    go = option(argv, "--go")
    report: dict[str, Any] = {"output": None, "error": None}
    code = 0
    async with open_stores(db, wal=True, prefix=prefix) as (_, inner):
        cp = DecidingCheckpointer(inner, points, hold)
        try:
            if phase == "decide":
                if go is not None:
                    await asyncio.to_thread(wait_for, go, option(argv, "--verdict"))
                verdict = option(argv, "--verdict") == "yes"
                await approvals.decide(cp, RUN_ID, {"p-pay": verdict}, reason="policy")
            else:
                agent = build_agent(points, logdir, f"{phase}{attempt}")
                result = await Runner.run(
                    agent, "pay the bill", checkpoint=CheckpointOptions(cp, RUN_ID)
                )
                report["output"] = result.output
        except ApprovalPending as exc:
            report["error"] = str(exc)
            code = PARKED_EXIT
        except UserError as exc:
            report["error"] = str(exc)
            code = USER_ERROR_EXIT
    report["counts"] = points.counts
    print(json.dumps(report))
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
