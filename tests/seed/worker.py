"""A worker process for the seed tests: one ``Runner.run`` configured by a JSON argument.

It may kill itself with SIGKILL at a named point (inside a tool, or just before the session
append), as a crashed worker would; on success it prints one JSON line with the answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from typing import Any

from lovia import (
    Agent,
    CheckpointOptions,
    RunContext,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    UserError,
    tool,
)
from lovia.testing import ScriptedProvider, batch, call, text


def open_stores(store: dict[str, Any]) -> tuple[Any, Any]:
    """(session, checkpointer) on the store the test names: a SQLite file or a PostgreSQL prefix."""
    if store["kind"] == "postgres":
        from lovia import PostgresCheckpointer, PostgresSession

        return (
            PostgresSession(store["dsn"], table_prefix=store["prefix"]),
            PostgresCheckpointer(store["dsn"], table_prefix=store["prefix"]),
        )
    wal = store["kind"] == "sqlite-wal"
    return SQLiteSession(store["path"], wal=wal), SQLiteCheckpointer(store["path"], wal=wal)


def _script(turns: list[list[Any]]) -> list[Any]:
    out: list[Any] = []
    for turn in turns:
        if turn[0] == "text":
            out.append(text(turn[1]))
        elif turn[0] == "call":
            out.append(call(turn[1], turn[2], call_id=turn[3]))
        else:  # "batch": several calls in one model turn
            out.append(batch(*[(c[0], c[1], c[2]) for c in turn[1]]))
    return out


class KillingSession:
    """A session that dies (SIGKILL) when the run appends to it: a crash between the
    checkpoint marked completed and the session append."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def segments(self, session_id: str) -> Any:
        return await self.inner.segments(session_id)

    async def load(self, session_id: str) -> Any:
        return await self.inner.load(session_id)

    async def append(self, session_id: str, entries: Any, **kw: Any) -> Any:
        os.kill(os.getpid(), signal.SIGKILL)

    async def clear(self, session_id: str) -> None:
        await self.inner.clear(session_id)


async def main(cfg: dict[str, Any]) -> None:
    session, cp = open_stores(cfg["store"])
    kill = cfg.get("kill") or {}

    def log(line: str) -> None:
        with open(cfg["log"], "a", encoding="utf-8") as f:
            f.write(line + "\n")

    async def act(name: str, ctx: RunContext[Any]) -> str:
        log(f"{name} turn={ctx.turn} run={ctx.run_id}")
        if kill.get("tool") == name:
            wait_for = kill.get("after_result_of")
            if wait_for:  # die only once the sibling's result is in the checkpoint
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    snap = await cp.load(ctx.run_id)
                    entries = snap.entries if snap else []
                    if wait_for in {e.call_id for e in entries if e.type == "tool_result"}:
                        break
                    await asyncio.sleep(0.02)
            os.kill(os.getpid(), signal.SIGKILL)
        return f"{name}-result"

    @tool(parallel=cfg.get("parallel", False))
    async def a(ctx: RunContext[Any]) -> str:
        """Tool a."""
        return await act("a", ctx)

    @tool(parallel=cfg.get("parallel", False))
    async def b(ctx: RunContext[Any]) -> str:
        """Tool b."""
        return await act("b", ctx)

    model = ScriptedProvider(_script(cfg["script"]))
    agent = Agent("worker", model=model, tools=[a, b])
    options = CheckpointOptions(
        cp,
        cfg["run_id"],
        if_run_exists=cfg.get("if_run_exists", "resume"),
        delete_on_success=cfg.get("delete_on_success", False),
    )
    run_session = KillingSession(session) if kill.get("append") else session
    try:
        result = await Runner.run(
            agent,
            cfg["input"],
            session=run_session,
            session_id=cfg["session_id"],
            checkpoint=options,
        )
    except UserError as exc:
        print(json.dumps({"user_error": str(exc), "hint": exc.hint}))
        return
    finally:
        for store in (session, cp):
            await store.close()
    seen = [[m.role, m.content] for c in model.calls for m in c if m.role == "user"]
    print(
        json.dumps(
            {
                "output": result.output,
                "model_calls": len(model.calls),
                "user_messages_seen": seen,
                "run_id": result.run_id,
                "finish_reason": result.finish_reason,
                "turns": result.turns,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
