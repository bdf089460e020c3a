"""A run a test drives in a child process, which SIGKILLs itself at one chosen point.

    python child.py DB LOG SCENARIO [--kill POINT] [--url URL] [--dsn DSN --prefix P]

Each attempt resumes run ``effects-run`` from the SQLite checkpoint DB (with ``--dsn``: from
PostgreSQL, in the tables of prefix P) (the script's model
turns start after the turns the checkpoint already holds). Every tool appends a JSON line to
LOG (fsync'ed before the tool goes on, so a line written just before a kill is kept).

Scenarios:
  ``keys``: three calls with the same id and arguments, two in turn 1 and one in turn 2; each
  logs ``ctx.idempotency_key``. ``--kill key2`` kills in the turn-2 call after logging.
  ``steps``: one tool with three recorded steps, each logging its effect; ``--kill stepN``
  kills right after step N's effect (before its record), ``--kill afterN`` right after step
  N returned (its record saved).
  ``pay``: charges through the payment server at URL (two parallel charges, then one more);
  ``--kill`` names ``before:N`` (the N-th charge, before its request), ``after:N`` (after
  the server answered, before the tool returned), ``saved:N`` (after the N-th tool result
  was saved) or ``model:N`` (inside the N-th model call of this attempt).
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
    AgentHooks,
    CheckpointOptions,
    PostgresCheckpointer,
    RunContext,
    Runner,
    SQLiteCheckpointer,
    events,
    tool,
)
from lovia.testing import ScriptedProvider, batch, call, text

RUN_ID = "effects-run"

SCRIPTS: dict[str, list[Any]] = {
    "keys": [
        batch(("record", {"tag": "x"}, "c1"), ("record", {"tag": "x"}, "c1")),
        call("record", {"tag": "x"}, call_id="c1"),
        text("done"),
    ],
    "steps": [call("three", {}), text("done")],
    "pay": [
        batch(("charge", {"cents": 100}, "p1"), ("charge", {"cents": 250}, "p2")),
        call("charge", {"cents": 100}, call_id="p1"),
        text("paid"),
    ],
}


def main() -> None:
    db, log_path, scenario = sys.argv[1:4]
    opts = sys.argv[4:]
    kill = opts[opts.index("--kill") + 1] if "--kill" in opts else ""
    url = opts[opts.index("--url") + 1] if "--url" in opts else ""
    dsn = opts[opts.index("--dsn") + 1] if "--dsn" in opts else ""
    prefix = opts[opts.index("--prefix") + 1] if "--prefix" in opts else "lovia_"
    counts: dict[str, int] = {}

    def log(**record: Any) -> None:
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def point(name: str) -> None:
        counts[name] = counts.get(name, 0) + 1
        if kill in (name, f"{name}:{counts[name]}"):
            os.kill(os.getpid(), signal.SIGKILL)

    @tool
    async def record(ctx: RunContext[None], tag: str) -> str:
        log(kind="key", key=ctx.idempotency_key, turn=ctx.turn)
        point(f"key{ctx.turn}")
        return "ok"

    @tool
    async def three(ctx: RunContext[None]) -> str:
        results = []
        for n in (1, 2, 3):

            def effect(n: int = n) -> dict[str, int]:
                log(kind="step", step=n)
                point(f"step{n}")
                return {"step": n}

            results.append(await ctx.step(f"s{n}", effect))
            point(f"after{n}")
        return json.dumps(results)

    @tool
    async def charge(ctx: RunContext[None], cents: int) -> str:
        import httpx

        point("before")
        async with httpx.AsyncClient() as client:
            resp = await client.post(
                url + "/charges",
                json={"cents": cents},
                headers={"Idempotency-Key": ctx.idempotency_key},
            )
        resp.raise_for_status()
        point("after")
        return str(resp.json()["charge"])

    async def run() -> None:
        store: Any = (
            PostgresCheckpointer(dsn, table_prefix=prefix)
            if dsn
            else SQLiteCheckpointer(db, wal=True)
        )
        async with store as cp:
            stored = await cp.load(RUN_ID)
            done = stored.turns if stored is not None else 0
            model = ScriptedProvider(SCRIPTS[scenario][done:])
            original = model.stream

            def stream(*args: Any, **kwargs: Any) -> Any:
                point("model")
                return original(*args, **kwargs)

            model.stream = stream  # type: ignore[method-assign]

            hooks = AgentHooks()

            @hooks.on(events.ToolCallCompleted)
            def saved(event: Any, ctx: Any) -> None:  # hooks hear a result after its save
                point("saved")

            agent = Agent("effects", model=model, tools=[record, three, charge], hooks=hooks)
            result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, RUN_ID))
            print(json.dumps({"output": result.output}))

    asyncio.run(run())


if __name__ == "__main__":
    main()
