"""How long one chat's request takes when other chats hold many unfinished runs.

400 failed runs of 200 KB each in other chats, one SQLite file; prints JSON with the median
time of ``GET /api/sessions/{id}`` for a chat with no run of its own, and of ``GET /api/sessions``
(the sidebar, which lists every chat's unfinished run: its first request, and the median of
the rest) (ASGI in process, so the figure is the server's work). Each run is one user message
of K KB; with ``--input-kb I`` it is a message of I KB and, in a second save, an answer of the
rest (the usual shape: a short question, a long output).
``python benchmarks/web_pending.py [--runs N] [--kb K] [--input-kb I]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from lovia import AssistantTextEntry, InputEntry, RunHead, SQLiteCheckpointer, SQLiteSession
from lovia.demo import demo_agent
from lovia.web import ChatStore, create_app


async def main(
    runs: int, kb: int, requests: int, input_kb: int | None = None
) -> dict[str, float | int | None]:
    requests = max(requests, 2)
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "lovia.db"
        cp = SQLiteCheckpointer(db, wal=True)
        session = SQLiteSession(db, wal=True)
        for i in range(runs):
            head = RunHead("demo", status="failed", session_id=f"c{i}", error={"type": "X"})
            first = kb if input_kb is None else min(input_kb, kb)
            await cp.append(f"r{i}", [InputEntry(content="x" * (first * 1024))], head)
            if first < kb:
                answer = AssistantTextEntry(content="y" * ((kb - first) * 1024))
                await cp.append(f"r{i}", [answer], head)
        await session.append("mine", [InputEntry(content="hello")], run_id="m0")
        app = create_app(
            demo_agent(delay=0), store=ChatStore(session, checkpointer=cp), titles=False
        )
        transport = httpx.ASGITransport(app=app)
        times: dict[str, list[float]] = {"/api/sessions/mine": [], "/api/sessions": []}
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            for url, spent in times.items():
                for _ in range(requests):
                    start = time.perf_counter()
                    response = await c.get(url)
                    spent.append(time.perf_counter() - start)
                    assert response.status_code == 200
            assert len(response.json()) == runs + 1  # every chat listed, with its title
        await session.close()
        await cp.close()
    return {
        "other_runs": runs,
        "run_kb": kb,
        "input_kb": kb if input_kb is None else min(input_kb, kb),
        "requests": requests,
        "median_ms": ms(statistics.median(times["/api/sessions/mine"])),
        "chat_list_first_ms": ms(times["/api/sessions"][0]),
        "chat_list_median_ms": ms(statistics.median(times["/api/sessions"][1:])),
    }


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--kb", type=int, default=200)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--input-kb", type=int, default=None, help="the first message's size")
    parser.add_argument("--quick", action="store_true", help="40 runs of 20 KB, 5 requests")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.kb, args.requests = 40, 20, 5
    print(json.dumps(asyncio.run(main(args.runs, args.kb, args.requests, args.input_kb))))
