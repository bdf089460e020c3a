"""The notices of a queued run's text deltas (``lovia._queue_deltas``): sent by its worker,
read by the web server that follows it, on the queue's LISTEN/NOTIFY channel."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from .pg_queue import PgRunQueue

log = logging.getLogger("lovia.workers")


async def next_notice(queue: PgRunQueue, listener: Any, run_id: str, wait: float) -> str | None:
    """The payload of the next notice about ``run_id`` on ``listener`` (its key for a state
    change or a saved step, JSON for text deltas), or ``None`` after ``wait`` seconds (or at
    once without a listener, after the wait)."""
    if listener is None:
        await asyncio.sleep(wait)
        return None
    key = queue.table_prefix + run_id
    quoted = json.dumps(key)  # as a delta's JSON holds it
    try:
        async for note in listener.notifies(timeout=wait, stop_after=None):
            payload = str(note.payload)
            if payload == key or (payload[:1] == "{" and quoted in payload):
                return payload
    except Exception as exc:  # a dropped LISTEN connection: the poll carries on
        log.info("follow: LISTEN connection lost, polling: %s", exc)
        await asyncio.sleep(wait)
    return None


async def send_notices(queue: PgRunQueue, payloads: list[str]) -> None:
    """Send ``payloads`` on the queue's channel, in order, in one statement."""
    async with queue.app.connector.pool.connection() as conn:
        await conn.execute(
            "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) WITH ORDINALITY AS u(p, i) ORDER BY i",
            (queue.channel, payloads),
        )
