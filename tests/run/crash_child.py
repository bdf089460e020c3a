"""A worker process for the crash tests: runs one checkpointed job and, when told to, kills
itself with SIGKILL at one point of the run (no cleanup, no finally blocks, like a real crash).

    python crash_child.py DB RUN_ID KILL_AT EXECUTIONS_FILE

KILL_AT is ``tool`` (inside the second tool call), ``model-saved`` (right after the model turn
that asked for the second call was checkpointed), ``before-session`` (after "checkpoint
completed", before "session appended") or ``never``. It prints the result as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from lovia import (
    Agent,
    CheckpointOptions,
    RunHead,
    Runner,
    RunSnapshot,
    Segment,
    SessionHistory,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    tool,
)
from lovia.messages import AssistantTurn, Message
from lovia.testing import ScriptedProvider, call, text

DB, RUN_ID, KILL_AT, EXECUTIONS = sys.argv[1:5]


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@tool
def work(n: int) -> str:
    """Do unit of work n."""
    with open(EXECUTIONS, "a") as f:
        f.write(f"work {n}\n")
    if KILL_AT == "tool" and n == 2:
        die()
    return f"work {n} done"


def model(messages: list[Message]) -> AssistantTurn:
    """Decide from the conversation, so a fresh process picks up wherever the run stopped."""
    done = sum(1 for m in messages if m.role == "tool")
    if done < 2:
        return call("work", {"n": done + 1}, call_id=f"call_{done + 1}")
    return text(f"finished {done} units")


class KillAfterSave:
    """A checkpointer that dies right after saving the model turn that calls work 2."""

    def __init__(self, inner: SQLiteCheckpointer) -> None:
        self.inner = inner

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        await self.inner.append(run_id, entries, head)
        if KILL_AT == "model-saved" and any(
            isinstance(e, ToolCallEntry) and e.call_id == "call_2" for e in entries
        ):
            die()

    async def load(self, run_id: str) -> RunSnapshot | None:
        return await self.inner.load(run_id)

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)


class KillBeforeAppend:
    """A session that dies when the completed run is about to be appended.

    It keeps the inner store's version (``history``, ``expected_version``), so the runner
    appends with the version check, as on a built-in store."""

    def __init__(self, inner: SQLiteSession) -> None:
        self.inner = inner

    async def segments(self, session_id: str) -> list[Segment]:
        return await self.inner.segments(session_id)

    async def history(self, session_id: str) -> SessionHistory:
        return await self.inner.history(session_id)

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        return await self.inner.load(session_id)

    async def append(
        self,
        session_id: str,
        entries: Sequence[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
        expected_version: int | None = None,
    ) -> str:
        if KILL_AT == "before-session":
            die()
        return await self.inner.append(
            session_id, entries, run_id=run_id, meta=meta, expected_version=expected_version
        )

    async def clear(self, session_id: str) -> None:
        await self.inner.clear(session_id)


async def main() -> None:
    provider = ScriptedProvider([model] * 5)
    agent = Agent(name="worker", model=provider, tools=[work])
    async with SQLiteCheckpointer(DB, wal=True) as cp, SQLiteSession(DB, wal=True) as session:
        result = await Runner.run(
            agent,
            "do two units of work",
            session=KillBeforeAppend(session),
            session_id="jobs",
            # The default 30 s lease with on_busy="fail": a re-submission must see that the
            # killed worker (same host, dead pid) is gone and take the run over at once.
            # The wrapper (no lease support) is only used where it kills.
            checkpoint=CheckpointOptions(
                KillAfterSave(cp) if KILL_AT == "model-saved" else cp, RUN_ID, on_busy="fail"
            ),
        )
    results = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    print(
        json.dumps(
            {
                "output": result.output,
                "model_calls": len(provider.calls),
                "turns": result.turns,
                "replayed": result.replayed,
                "results": results,
            }
        )
    )


asyncio.run(main())
