"""What the chat claim costs a web request: prints JSON.

    python benchmarks/web_claim.py [--messages 100] [--quick]

Every request that writes to a chat first takes the chat's claim (a lease row in the
checkpointer) and gives it back when its run has been saved. This measures, on one SQLite
file in WAL mode: (a) taking and releasing a claim alone; (b) a whole message (POST, the run
with a scripted one-turn model, the SSE answer read to its end) through the real ASGI app.
Figures are medians and 95th percentiles in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from lovia import Agent, SQLiteCheckpointer, SQLiteSession
from lovia.chats import chat_claim_key
from lovia.stores.run_lease import RunLease
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatStore, create_app


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 3),
    }


async def _claims(db: Path, n: int) -> list[float]:
    samples = []
    async with SQLiteCheckpointer(db, wal=True) as cp:
        for i in range(n):
            lease = RunLease(cp, chat_claim_key(f"c{i}"), ttl=30.0, on_busy="fail")
            start = time.perf_counter()
            await lease.acquire()
            await lease.release()
            samples.append(time.perf_counter() - start)
    return samples


async def _messages(db: Path, n: int) -> list[float]:
    model = ScriptedProvider([text("ok")] * n)
    session = SQLiteSession(db, wal=True)
    cp = SQLiteCheckpointer(db, wal=True)
    app: Any = create_app(
        Agent("bench", model=model), store=ChatStore(session, checkpointer=cp), titles=False
    )
    samples = []
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        for i in range(n):
            start = time.perf_counter()
            answer = await client.post(
                "/api/chat/stream", json={"message": "hi", "session_id": f"m{i}"}
            )
            samples.append(time.perf_counter() - start)
            assert "event: done" in answer.text, answer.text
    await session.close()
    await cp.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="20 of each")
    args = parser.parse_args()
    n = 20 if args.quick else args.messages
    with tempfile.TemporaryDirectory() as tmp:
        claims = asyncio.run(_claims(Path(tmp) / "claims.db", n))
        messages = asyncio.run(_messages(Path(tmp) / "messages.db", n))
    print(
        json.dumps(
            {
                "store": "sqlite (wal)",
                "n": n,
                "claim_acquire_release": _summary(claims),
                "message_round_trip": _summary(messages),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
