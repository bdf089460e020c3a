"""A payment that waits for a person: the run parks in one process, a person approves in a
second, and a third finishes the run. The payment is made once.

The agent's ``approval_handler`` answers ``"defer"``: nobody is there to decide now, so the
run is parked in its checkpoint and the first process exits. Later, a person (here a second
process; in real life the web page or ``lovia runs approve``) lists what waits and approves
it. A third process, which could be any worker, submits the same run id again: the approved
call runs, the model writes its answer, and the run completes.

Run: python examples/06_approvals.py [STATE_DIR]
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    Runner,
    SQLiteCheckpointer,
    approvals,
    tool,
)
from lovia.testing import ScriptedProvider, ScriptedTurn, call, text

RUN_ID = "pay-acme-2026-12"  # the job's id: the same in every process


def build_agent(state: Path) -> Agent:
    ledger = state / "payments.json"  # stands in for the bank

    @tool(needs_approval=True)
    def send_payment(to: str, cents: int) -> str:
        """Pay a supplier."""
        paid: list[Any] = json.loads(ledger.read_text()) if ledger.exists() else []
        paid.append({"to": to, "cents": cents})
        ledger.write_text(json.dumps(paid))
        return f"paid {cents / 100:.2f} EUR to {to}"

    def model(messages: list[Any]) -> ScriptedTurn:
        """Stands in for the LLM: pay, then report what the tool said."""
        if len(messages) == 2:  # the system prompt and the request
            return call("send_payment", {"to": "ACME", "cents": 125_000}, call_id="pay_1")
        return text("Done: ACME's December invoice is paid.")

    return Agent(
        "payer",
        instructions="Pay the supplier invoices you are asked to pay.",
        model=ScriptedProvider([model, model]),
        tools=[send_payment],
        approval_handler=lambda call, ctx: "defer",  # nobody decides now: park the run
    )


async def step(state: Path, name: str) -> None:
    async with SQLiteCheckpointer(state / "runs.db", wal=True) as checkpointer:
        if name == "approve":
            for c in await approvals.pending(checkpointer, RUN_ID):
                print(f"approving {c.name} {c.arguments}")
                await approvals.decide(checkpointer, RUN_ID, {c.id: True}, reason="invoice checked")
            return
        # "ask" starts the run; "resume" submits the same run id again, with no new input
        request = "Pay ACME's December invoice." if name == "ask" else []
        try:
            result = await Runner.run(
                build_agent(state), request, checkpoint=CheckpointOptions(checkpointer, RUN_ID)
            )
        except ApprovalPending as parked:
            print(f"parked {parked.run_id}: waiting for {[c.name for c in parked.calls]}")
        else:
            print(f"result: {result.output}")


def main(state: Path) -> int:
    for name in ("ask", "approve", "resume"):  # three separate processes
        print(f"[{name}]", flush=True)
        done = subprocess.run([sys.executable, __file__, "--step", name, str(state)])
        if done.returncode != 0:
            return done.returncode
    paid = json.loads((state / "payments.json").read_text())
    print(f"payments made: {len(paid)}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--step":
        asyncio.run(step(Path(sys.argv[3]), sys.argv[2]))
    else:
        directory = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
        directory.mkdir(parents=True, exist_ok=True)
        sys.exit(main(directory))
