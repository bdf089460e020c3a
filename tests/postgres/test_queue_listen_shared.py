"""Followers of queued runs in one process share one LISTEN connection, and each still gets
its own run's notices (issue 34: one LISTEN connection per web server, not one per stream)."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.workers import AgentQueue

pytest.importorskip("procrastinate")

RUNS = 4


def listen_connections(dsn: str, app_name: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
            "AND query LIKE 'LISTEN%%'",
            (app_name,),
        ).fetchone()
    return int(row[0]) if row else 0


async def test_followers_share_one_listen_connection_and_each_gets_its_notice(
    queue_dsn: str,
) -> None:
    app_name = f"lovia_follow_{uuid.uuid4().hex[:8]}"
    dsn = f"{queue_dsn}&application_name={app_name}"
    agent = Agent("support", model=ScriptedProvider([text("hi")]))
    async with AgentQueue(agent, dsn) as queue:
        for i in range(RUNS):
            await queue.submit(f"r{i}", "hello")
        seen: dict[str, list[str]] = {f"r{i}": [] for i in range(RUNS)}
        queued = asyncio.Semaphore(0)

        async def watch(run_id: str) -> None:
            # a poll every 60 s: only a notice ends the follow within the test's guard
            async for state in queue.follow(run_id, poll_interval=60):
                seen[run_id].append(state["state"])
                if state["state"] == "queued":
                    queued.release()

        watchers = [asyncio.ensure_future(watch(run_id)) for run_id in seen]
        for _ in seen:
            await asyncio.wait_for(queued.acquire(), 30)
        assert listen_connections(queue_dsn, app_name) == 1
        for run_id in seen:
            assert await queue.cancel(run_id)
        await asyncio.wait_for(asyncio.gather(*watchers), 30)
    assert seen == {run_id: ["queued", "cancelled"] for run_id in seen}
