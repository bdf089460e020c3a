"""Attacks on token streaming from workers: a model's text deltas go out as PostgreSQL
NOTIFY payloads (at most 8000 bytes each). Hostile text (a delta far longer than a chunk,
emoji whose JSON escapes take 12 bytes a character, quotes, backslashes, NUL, lone
surrogates, JSON-looking text naming another run) must still reach the follower of its own
run whole, and never another run's follower. Real PostgreSQL, LISTEN on a second connection."""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

import pytest

from lovia._queue_deltas import DeltaFollower, DeltaSender

DSN = os.environ.get("LOVIA_TEST_POSTGRES_DSN")
pytestmark = pytest.mark.skipif(not DSN, reason="set LOVIA_TEST_POSTGRES_DSN")


class Event:
    def __init__(self, type: str, **fields: Any) -> None:
        self.type = type
        self.__dict__.update(fields)


HOSTILE = [
    "x" * 9000,  # one delta far past a notice's size
    "\U0001f600" * 1500,  # each a 12-byte JSON escape
    "\x00\x01\\\"'; NOTIFY other, 'x'; --",
    "\ud800 lone \udfff surrogates",
    '{"r":"lovia_other","t":1,"s":0,"d":"injected"}',
]


async def _stream(texts: list[str]) -> tuple[str, str]:
    """Send ``texts`` as deltas of run A over a real channel; what A's and B's followers show."""
    import psycopg

    channel = f"attack5_{uuid.uuid4().hex[:8]}"
    assert DSN
    listen = await psycopg.AsyncConnection.connect(DSN, autocommit=True)
    sender_conn = await psycopg.AsyncConnection.connect(DSN, autocommit=True)
    try:
        await listen.execute(f"LISTEN {channel}")

        async def send(payloads: list[str]) -> None:
            await sender_conn.execute(
                "SELECT pg_notify(%s, p) FROM unnest(%s::text[]) WITH ORDINALITY AS u(p, i) "
                "ORDER BY i",
                (channel, payloads),
            )

        sender = DeltaSender("lovia_a", send)
        sender.see(Event("turn_started", turn=1))
        for text in texts:
            sender.see(Event("text_delta", delta=text))
        await sender.flush()
        await sender.close()
        a, b = DeltaFollower("lovia_a", 0), DeltaFollower("lovia_other", 0)
        shown_a = shown_b = ""
        async for note in listen.notifies(timeout=2.0):
            for follower, which in ((a, "a"), (b, "b")):
                for e in follower.on_notice(note.payload) or []:
                    if e["type"] == "text_delta":
                        if which == "a":
                            shown_a += e["delta"]
                        else:
                            shown_b += e["delta"]
        return shown_a, shown_b
    finally:
        await listen.close()
        await sender_conn.close()


@pytest.mark.parametrize("text", HOSTILE, ids=["long", "emoji", "sql", "surrogates", "json"])
def test_a_hostile_delta_reaches_its_own_follower_whole(text: str) -> None:
    # a lone surrogate cannot go through UTF-8: the worker sends it escaped, as JSON does
    shown_a, shown_b = asyncio.run(_stream(["before ", text, " after"]))
    assert shown_a == "before " + text + " after"
    assert shown_b == ""
