"""A live run's mailbox is capped (issue 14): at most ``MAILBOX_LIMIT`` messages wait for the
run; one more gets 429 with a clear reason and is not queued, while the waiting ones are
kept as before. A real ``lovia web`` process on a SQLite file; the agent naps in a tool, so
messages sent meanwhile wait in its mailbox."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx

from lovia.chats.supervisor import MAILBOX_LIMIT

from .test_mailbox import segments, send, sse, start, until, users

__all__ = ["start"]  # the fixture, used by name


def test_a_message_beyond_the_mailbox_cap_is_refused_and_not_queued(
    start: Any, tmp_path: Path
) -> None:
    base, _ = start(nap=60)
    waiting = [f"m{i}" for i in range(MAILBOX_LIMIT)]

    async def scenario() -> tuple[list[httpx.Response], httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as c:
            async with c.stream("POST", "/api/chat/stream", json=send("f", "a")) as first:
                await until(sse(first), "tool_call")
                for text in waiting:
                    joined = await c.post(
                        "/api/chat/inject", json={"session_id": "f", "message": text}
                    )
                    assert joined.json()["accepted"] is True, joined.text
                refused = [
                    await c.post("/api/chat/stream", json=send("f", "one too many")),
                    await c.post(
                        "/api/chat/inject", json={"session_id": "f", "message": "one too many"}
                    ),
                ]
                live = await c.get("/api/sessions/f")
                stopped = await c.post("/api/chat/cancel?session_id=f")
            return refused, live, stopped

    refused, live, stopped = asyncio.run(scenario())
    for response in refused:
        assert response.status_code == 429, response.text
        body = response.json()["detail"]
        assert f"{MAILBOX_LIMIT} messages" in body["message"], body
        assert body["code"] == "mailbox_full"
        assert body["hint"] and response.headers["retry-after"]
    assert "one too many" not in live.text  # not queued, not announced to the run's followers
    assert stopped.status_code == 200
    [seg] = segments(tmp_path, "f")
    assert users([seg]) == [["a", *waiting]]  # every waiting message kept, the refused ones not
