"""A job that survives a crash: the worker dies half-way, the same call is re-submitted, and
the run resumes from its checkpoint instead of starting over.

The worker sends three invoices. While sending the second one it is killed with SIGKILL (as
an out-of-memory kill or a lost machine would do it), after the invoice went out but before
its result was checkpointed. The supervisor simply runs the same job again with the same
run id. The finished invoice is not sent again (its result is in the checkpoint); the one in
flight runs again, and deduplicates on ``ctx.run_id`` + its arguments, so nobody is billed twice.

Run: python examples/05_resume.py [STATE_DIR]
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lovia import Agent, CheckpointOptions, RunContext, Runner, SQLiteCheckpointer, tool
from lovia.messages import AssistantTurn, Message
from lovia.testing import ScriptedProvider, call, text

RUN_ID = "invoice-batch-2026-12"  # a job id: the same on every re-submission
INVOICES = ["INV-1", "INV-2", "INV-3"]


def worker(state: Path) -> None:
    """One attempt at the job; the first attempt crashes inside a tool."""
    ledger_file = state / "ledger.json"  # stands in for the payment provider's records
    crash_marker = state / "crashed-once"

    @tool
    def send_invoice(ctx: RunContext[Any], number: str) -> str:
        """Send one invoice to the customer."""
        ledger: dict[str, str] = json.loads(ledger_file.read_text()) if ledger_file.exists() else {}
        key = f"{ctx.run_id}:{number}"  # at-least-once tool: deduplicate on run id + arguments
        if key in ledger:
            return f"{number} was already sent"
        ledger[key] = "sent"
        ledger_file.write_text(json.dumps(ledger))
        print(f"  sent {number}", flush=True)
        if number == "INV-2" and not crash_marker.exists():
            crash_marker.touch()
            print("  worker killed while sending INV-2", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return f"{number} sent"

    def billing_model(messages: list[Message]) -> AssistantTurn:
        """A stand-in for a real model: send the next invoice until all are sent."""
        done = sum(1 for m in messages if m.role == "tool")
        if done < len(INVOICES):
            return call("send_invoice", {"number": INVOICES[done]}, call_id=f"send_{done}")
        return text(f"All {len(INVOICES)} invoices are out.")

    model = ScriptedProvider([billing_model] * (len(INVOICES) + 1))
    agent = Agent(
        "billing", instructions="Send this month's invoices.", model=model, tools=[send_invoice]
    )

    async def attempt() -> None:
        async with SQLiteCheckpointer(state / "jobs.db", wal=True) as checkpointer:
            result = await Runner.run(
                agent,
                "Send the December invoices.",
                # The killed worker's run lease names a dead process on this host, so the
                # re-submission takes the run over at once.
                checkpoint=CheckpointOptions(checkpointer, RUN_ID),
            )
        print(f"  result: {result.output} (turns={result.turns}, model calls={len(model.calls)})")

    asyncio.run(attempt())


def supervise(state: Path) -> int:
    """Re-submit the same job until it finishes, like a job queue would."""
    for attempt in range(1, 4):
        print(f"attempt {attempt}:", flush=True)
        done = subprocess.run([sys.executable, __file__, "--worker", str(state)])
        if done.returncode == 0:
            ledger = json.loads((state / "ledger.json").read_text())
            print(f"ledger: {sorted(ledger)} ({len(ledger)} invoices, each sent once)")
            return 0
        print(f"  worker exited with {done.returncode}; re-submitting {RUN_ID}", flush=True)
    return 1


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]))
    else:
        directory = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
        directory.mkdir(parents=True, exist_ok=True)
        sys.exit(supervise(directory))
