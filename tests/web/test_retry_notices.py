"""A model call that fails mid-answer and is tried again: the chat stream's `retrying` notice
is replayed to a reconnecting page only while the backoff it announced lasts, and a stop
during the next attempt keeps only what that attempt said (0.9.119's http-api.md:
`output_discarded` clears the current turn's rendered deltas).

The server is a real uvicorn on 127.0.0.1, in the test's event loop (the model's gates are
the test's events), so the streams are read as they arrive."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import uvicorn

from lovia import Agent, ProviderError, RetryPolicy
from lovia.transcript import FinishDelta, TextDelta

from .conftest import sid, web_app


@contextlib.asynccontextmanager
async def served(agent: Agent) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``agent``'s web app served over HTTP on a free port of 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(web_app(agent), host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    running = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not running.done(), "the server did not start"
            await asyncio.sleep(0.01)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client
    finally:
        server.should_exit = True
        await running


class CutOffOnce:
    """Attempt 1 says ``first`` and drops; attempt 2 says ``second``, then waits for
    ``finish`` before it ends."""

    name = "cut-off-once"
    model = "cut-off-once"
    supports_json_schema = False

    def __init__(self, first: str, second: str) -> None:
        self.first, self.second = first, second
        self.calls = 0
        self.finish = asyncio.Event()

    async def stream(self, entries: Any, **kw: Any) -> AsyncIterator[Any]:
        self.calls += 1
        if self.calls == 1:
            yield TextDelta(text=self.first)
            raise ProviderError("connection reset", retryable=True)
        yield TextDelta(text=self.second)
        await self.finish.wait()
        yield FinishDelta(reason="stop")


def follow(client: httpx.AsyncClient, path: str, **kw: Any) -> tuple[asyncio.Task[None], list[Any]]:
    """Read the chat stream at ``path`` in a task; its events (``{"event": name, **data}``)
    are added to the list as they arrive."""
    seen: list[dict[str, Any]] = []

    async def read() -> None:
        async with client.stream("POST", path, **kw) as response:
            name = "message"
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    seen.append({"event": name, **json.loads(line[5:])})

    return asyncio.create_task(read()), seen


async def until(seen: list[dict[str, Any]], test: Any) -> None:
    """Wait until an event of ``seen`` passes ``test``."""
    while not any(test(e) for e in seen):  # noqa: ASYNC110 - the list fills from a stream
        await asyncio.sleep(0.01)


def names(seen: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in seen]


async def test_a_reconnect_replays_the_retry_notice_only_during_its_backoff() -> None:
    in_backoff, backoff_over = asyncio.Event(), asyncio.Event()

    async def sleep(_delay: float) -> None:
        in_backoff.set()
        await backoff_over.wait()

    model = CutOffOnce("par", "whole answer")
    agent = Agent(name="bot", model=model, retry=RetryPolicy(max_attempts=2, sleep=sleep))
    async with served(agent) as client:
        first, _ = follow(client, "/api/chat/stream", json={"message": "go", "session_id": "s"})
        await asyncio.wait_for(in_backoff.wait(), 10)
        task, during = follow(client, f"/api/chat/reconnect{sid('s')}")
        await asyncio.wait_for(until(during, lambda e: e["event"] == "retrying"), 10)
        assert names(during).index("text_delta") < names(during).index("retrying")
        backoff_over.set()
        await asyncio.wait_for(until(during, lambda e: e["event"] == "output_discarded"), 10)
        later, after = follow(client, f"/api/chat/reconnect{sid('s')}")
        await asyncio.wait_for(until(after, lambda e: e["event"] == "output_discarded"), 10)
        model.finish.set()
        await asyncio.wait_for(asyncio.gather(first, task, later), 10)
    assert names(after)[-1] == "done"
    assert "retrying" not in names(after)  # its backoff is over: the notice is stale
    assert names(during).count("retrying") == 1


async def test_a_stop_after_a_retry_keeps_only_the_new_attempts_text() -> None:
    async def no_sleep(_delay: float) -> None:
        return None

    model = CutOffOnce("abandoned ", "kept")
    agent = Agent(name="bot", model=model, retry=RetryPolicy(max_attempts=2, sleep=no_sleep))
    async with served(agent) as client:
        task, seen = follow(client, "/api/chat/stream", json={"message": "go", "session_id": "s"})
        await asyncio.wait_for(until(seen, lambda e: e.get("delta") == "kept"), 10)
        assert names(seen).count("output_discarded") == 1
        stopped = await client.post(f"/api/chat/cancel{sid('s')}")
        assert stopped.status_code == 200 and stopped.json()["stopped"]
        await asyncio.wait_for(task, 10)
        detail = (await client.get("/api/sessions/s")).json()
    said = [m["content"] for m in detail["entries"] if m["role"] == "assistant"]
    assert said == ["kept"]


async def test_a_stop_during_the_backoff_keeps_none_of_the_failed_attempts_text() -> None:
    in_backoff = asyncio.Event()

    async def sleep(_delay: float) -> None:
        in_backoff.set()
        await asyncio.Event().wait()  # the backoff lasts until the stop ends it

    model = CutOffOnce("abandoned", "never said")
    agent = Agent(name="bot", model=model, retry=RetryPolicy(max_attempts=2, sleep=sleep))
    async with served(agent) as client:
        task, seen = follow(client, "/api/chat/stream", json={"message": "go", "session_id": "s"})
        await asyncio.wait_for(in_backoff.wait(), 10)
        await asyncio.wait_for(until(seen, lambda e: e["event"] == "retrying"), 10)
        stopped = await client.post(f"/api/chat/cancel{sid('s')}")
        assert stopped.status_code == 200 and stopped.json()["stopped"]
        await asyncio.wait_for(task, 10)
        detail = (await client.get("/api/sessions/s")).json()
    assert model.calls == 1
    said = [m["content"] for m in detail["entries"] if m["role"] == "assistant"]
    assert said == []
