"""The web server under load, as an attacker would load it, through a real server process
and real sockets: hundreds of clients following one chat, followers that stop reading (a
raw socket that never reads), floods of requests, a parked run with hundreds waiting on it.
The followed run goes on to its end, other chats answer, a follower that stops reading is
dropped rather than waited for, and every follower that reads gets the whole run."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.web_server import start_web, stop_web

from .conftest import decode, message, sid

APP = "tests.web.load_apps:talking"
TCP_TABLE = Path("/proc/net/tcp")
CHUNK_SIZE = 4096  # the loud run says ``wait N``'s N times this many characters


class Served:
    def __init__(self, base: str, gate: Path) -> None:
        self.base, self.gate = base, gate
        host, port = base.removeprefix("http://").split(":")
        self.address = (host, int(port))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    gate = tmp_path / "gate"
    env = {
        **os.environ,
        "LOVIA_TEST_GATE": str(gate),
        "LOVIA_TEST_CHUNK_SIZE": str(CHUNK_SIZE),
    }
    command = [sys.executable, "-m", "tests.web.serve", "--db", str(tmp_path / "web.db")]
    command += ["--app", APP, "--write-timeout", "5"]
    proc, base = start_web(command, env=env, quiet=True)
    try:
        yield Served(base, gate)
    finally:
        stop_web(proc)


def _silent_follower(served: Served, chat_id: str) -> socket.socket:
    """A socket that asks to follow ``chat_id`` and then reads nothing (with a tiny receive
    buffer, so what the server sends backs up at once)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(served.address)
    host = f"{served.address[0]}:{served.address[1]}"
    s.sendall(
        f"POST /api/chat/reconnect{sid(chat_id)} HTTP/1.1\r\nHost: {host}\r\n"
        "Content-Length: 0\r\n\r\n".encode()
    )
    return s


def _server_ends(port: int) -> set[int]:
    """The client ports of the connections the server on ``port`` still has open, from the
    kernel's TCP table (its reset of a client that reads nothing never reaches that client:
    the client's window is shut)."""
    ends: set[int] = set()
    for line in TCP_TABLE.read_text().splitlines()[1:]:
        local, remote = line.split()[1:3]
        if int(local.rsplit(":", 1)[1], 16) == port:
            ends.add(int(remote.rsplit(":", 1)[1], 16))
    return ends


def _dropped(served: Served, sockets: list[socket.socket]) -> int:
    """Wait, reading nothing, until the server has dropped every one of ``sockets``; how
    many it dropped, once all are or 120 s have passed."""
    ports = {s.getsockname()[1] for s in sockets}
    left = ports
    for _ in range(1200):
        left = ports & _server_ends(served.address[1])
        if not left:
            break
        time.sleep(0.1)
    return len(ports) - len(left)


async def _wait_live(client: httpx.AsyncClient) -> None:
    while not (await client.get("/api/runs")).json():  # noqa: ASYNC110 - no event to await
        await asyncio.sleep(0.05)


async def _follow(client: httpx.AsyncClient, chat_id: str, joined: asyncio.Event | None) -> str:
    """Follow ``chat_id``'s live run to its end: the body (``joined`` is set once the
    server answered with the stream's head)."""
    async with client.stream("POST", f"/api/chat/reconnect{sid(chat_id)}") as r:
        assert r.status_code == 200, await r.aread()
        if joined is not None:
            joined.set()
        return (await r.aread()).decode()


def _said(body: str) -> str:
    return "".join(e.get("delta", "") for e in decode(body) if e["event"] == "text_delta")


@pytest.mark.skipif(not TCP_TABLE.exists(), reason="reads Linux's TCP table")
def test_followers_that_stop_reading_are_dropped_and_hold_up_nothing(served: Served) -> None:
    """Fifty sockets follow a run that says 8 MB (more than a socket buffers), and never
    read. The run still says all of it to a follower that reads, another chat answers
    meanwhile, and each silent socket is dropped by the server instead of being waited for."""

    async def scenario() -> tuple[str, int]:
        async with httpx.AsyncClient(base_url=served.base, timeout=120) as client:
            starter = asyncio.create_task(_send(client, "loud", "wait 2000"))
            await _wait_live(client)
            silent = [_silent_follower(served, "loud") for _ in range(50)]
            try:
                served.gate.touch()
                other = await client.post("/api/chat", json=message("quiet", "hello"))
                assert other.status_code == 200, other.text
                assert other.json()["output"] == "echo: hello"
                body = await starter
                dropped = await asyncio.to_thread(_dropped, served, silent)
            finally:
                for s in silent:
                    s.close()
            return body, dropped

    body, dropped = asyncio.run(scenario())
    assert decode(body)[-1]["event"] == "done"
    assert _said(body) == "".join(chr(ord("a") + n % 26) * CHUNK_SIZE for n in range(2000))
    assert dropped == 50


async def _send(
    client: httpx.AsyncClient,
    chat_id: str,
    text: str,
    asked: asyncio.Future[dict[str, Any]] | None = None,
) -> str:
    """Send ``text`` to ``chat_id`` and read its stream to the end (``asked`` gets the
    ``approval_required`` event once the run has parked)."""
    body = ""
    async with client.stream("POST", "/api/chat/stream", json=message(chat_id, text)) as r:
        assert r.status_code == 200, await r.aread()
        async for chunk in r.aiter_text():
            body += chunk
            if asked is not None and not asked.done() and "event: parked" in body:
                for event in decode(body.rsplit("\n\n", 1)[0]):
                    if event["event"] == "approval_required":
                        asked.set_result(event)
                        break
    return body


def test_two_hundred_followers_and_a_request_flood_all_get_their_answers(
    served: Served,
) -> None:
    """Two hundred clients follow one run while two hundred more list the chats at once:
    every follower gets the whole run, every listing answers, another chat answers."""

    async def scenario() -> tuple[str, list[str], list[int], Any]:
        limits = httpx.Limits(max_connections=1000)
        async with httpx.AsyncClient(base_url=served.base, timeout=120, limits=limits) as client:
            starter = asyncio.create_task(_send(client, "loud", "wait 20"))
            await _wait_live(client)
            joined = [asyncio.Event() for _ in range(200)]
            followers = [asyncio.create_task(_follow(client, "loud", j)) for j in joined]
            await asyncio.gather(*(j.wait() for j in joined))
            listings = [asyncio.create_task(client.get("/api/sessions")) for _ in range(200)]
            served.gate.touch()
            other = await client.post("/api/chat", json=message("quiet", "hello"))
            codes = [r.status_code for r in await asyncio.gather(*listings)]
            return await starter, await asyncio.gather(*followers), codes, other

    body, followed, codes, other = asyncio.run(scenario())
    said = _said(body)
    assert len(said) == 20 * CHUNK_SIZE
    for got in followed:
        assert decode(got)[-1]["event"] == "done"
        assert _said(got).endswith(said[-CHUNK_SIZE:])  # its snapshot held the start
    assert set(codes) == {200}
    assert other.status_code == 200 and other.json()["output"] == "echo: hello"


def test_hundreds_following_a_parked_run_follow_it_on_once_it_is_approved(
    served: Served,
) -> None:
    """Two hundred followers of a run that parks for an approval wait on it (the store is
    read about once a second per follower, not twenty times); another chat answers
    meanwhile; the approval resumes the run and every follower (the sender's own stream
    too) gets its end."""

    async def scenario() -> tuple[list[str], Any]:
        limits = httpx.Limits(max_connections=1000)
        async with httpx.AsyncClient(base_url=served.base, timeout=120, limits=limits) as client:
            asked: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            starter = asyncio.create_task(_send(client, "parked", "park", asked))
            await _wait_live(client)
            joined = [asyncio.Event() for _ in range(200)]
            followers = [asyncio.create_task(_follow(client, "parked", j)) for j in joined]
            await asyncio.gather(*(j.wait() for j in joined))
            served.gate.touch()
            request = await asked  # the run parked: it waits for a person
            other = await client.post("/api/chat", json=message("quiet", "hello"))
            decision = {
                "session_id": "parked",
                "call_id": request["id"],
                "run_id": request["run_id"],
                "digest": request["digest"],
                "decision": "approve",
            }
            decided = await client.post("/api/chat/approve", json=decision)
            assert decided.status_code == 200, decided.text
            return [await starter, *await asyncio.gather(*followers)], other

    followed, other = asyncio.run(scenario())
    assert other.status_code == 200 and other.json()["output"] == "echo: hello"
    for got in followed:
        events = decode(got)
        names = [e["event"] for e in events]
        assert "parked" in names and names[-1] == "done", events[-3:]
        results = [e["result"] for e in events if e["event"] == "tool_result"]
        assert results[-1] == "launched at moon"
