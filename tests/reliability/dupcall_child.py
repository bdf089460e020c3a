"""A run whose model asks for two tool calls with the same call id, killed between them.

    python dupcall_child.py DB EFFECTS tools|same FIRST crash|resume [PREFIX]

DB is a SQLite file or a ``postgresql://`` DSN (tables under PREFIX). The model's first turn
asks, in one turn and with the one call id ``dup``, for ``label="a"`` and ``label="b"``: on
two tools (``alpha`` and ``beta``, ``tools``) or twice on one tool (``act``, ``same``). Each
execution appends ``NAME:LABEL`` to EFFECTS (fsync'ed). In the ``crash`` phase the call whose
label is not FIRST waits until the other's result is checkpointed, then SIGKILLs the process
before taking effect. The second turn answers with what the model was sent: for each call it
saw, its id, tool, label and the outputs of the tool messages with that id. Prints JSON:
``output`` and the run's stored ``entries``.
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
    SQLiteCheckpointer,
    ToolResultEntry,
    TranscriptEntry,
    entry_to_dict,
    tool,
)
from lovia.messages import AssistantTurn, Message, ToolCall
from lovia.usage import Usage

RUN_ID = "dup-run"
USAGE = Usage(input_tokens=10, output_tokens=5)


class SignallingCheckpointer:
    """Sets ``result_saved`` once a save holding a tool result has landed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.result_saved = asyncio.Event()

    async def append(self, run_id: str, entries: Sequence[TranscriptEntry], head: RunHead) -> None:
        await self.inner.append(run_id, entries, head)
        if any(isinstance(e, ToolResultEntry) for e in entries):
            self.result_saved.set()

    async def load(self, run_id: str) -> RunSnapshot | None:
        snap: RunSnapshot | None = await self.inner.load(run_id)
        return snap

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)


def effect(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def model(messages: list[Message]) -> AssistantTurn:
    """Turn 1: two calls sharing one id. Turn 2: report the pairing the prompt carries."""
    calls = [c for m in messages for c in m.tool_calls]
    if not calls:
        return AssistantTurn(content=None, tool_calls=TURN, usage=USAGE)
    seen = [
        [
            c.id,
            c.name,
            json.loads(c.arguments)["label"],
            [m.content for m in messages if m.role == "tool" and m.tool_call_id == c.id],
        ]
        for c in calls
    ]
    return AssistantTurn(content=json.dumps(seen), usage=USAGE)


TURN: list[ToolCall] = []


async def main(db: str, effects: str, kind: str, first: str, phase: str, prefix: str) -> None:
    saved: list[asyncio.Event] = []

    async def act_as(name: str, label: str) -> str:
        if phase == "crash" and label != first:
            await saved[0].wait()  # the other call's result is on disk
            os.kill(os.getpid(), signal.SIGKILL)  # dies before taking effect
        effect(effects, f"{name}:{label}")
        return f"{name} did {label}"

    @tool
    async def alpha(label: str) -> str:
        """Do it the alpha way."""
        return await act_as("alpha", label)

    @tool
    async def beta(label: str) -> str:
        """Do it the beta way."""
        return await act_as("beta", label)

    @tool
    async def act(label: str) -> str:
        """Do it."""
        return await act_as("act", label)

    names = ("alpha", "beta") if kind == "tools" else ("act", "act")
    TURN[:] = [
        ToolCall(id="dup", name=name, arguments=json.dumps({"label": label}))
        for name, label in zip(names, "ab", strict=True)
    ]
    from lovia.testing import ScriptedProvider

    agent = Agent("worker", model=ScriptedProvider([model] * 3), tools=[alpha, beta, act])
    if db.startswith("postgresql://"):
        from lovia import PostgresCheckpointer

        store: Any = PostgresCheckpointer(db, table_prefix=prefix)
    else:
        store = SQLiteCheckpointer(db)
    async with store as inner:
        cp = SignallingCheckpointer(inner)
        saved.append(cp.result_saved)
        result = await Runner.run(agent, "do both", checkpoint=CheckpointOptions(cp, RUN_ID))
        snap = await inner.load(RUN_ID)
        assert snap is not None
    out = {"output": result.output, "entries": [entry_to_dict(e) for e in snap.entries]}
    print(json.dumps(out))


if __name__ == "__main__":
    db, effects, kind, first, phase = sys.argv[1:6]
    asyncio.run(main(db, effects, kind, first, phase, sys.argv[6] if len(sys.argv) > 6 else ""))
