"""Send while running (issue 16): a message sent while a run is live on the same server joins
that run through its mailbox, and is kept whether the run finishes, is stopped or crashes
after the injection; a run driven by another server answers 409 before anything is written.

Real ``lovia web`` processes on a SQLite file; the agent naps (a tool) once per message it
has not napped for, then repeats every user message it heard.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import SQLiteSession

from ..web_server import start_web as _start
from ..web_server import stop_web as _stop
from .conftest import decode

LOVIA = Path(sys.executable).with_name("lovia")


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., tuple[str, subprocess.Popen[bytes]]]]:
    """``start(nap=1, think=0)`` starts a ``lovia web`` on the test's database."""
    procs: list[subprocess.Popen[bytes]] = []
    saved = {k: os.environ.get(k) for k in ("LOVIA_TEST_NAP", "LOVIA_TEST_THINK")}

    def run(nap: float = 1.0, think: float = 0.0) -> tuple[str, subprocess.Popen[bytes]]:
        os.environ["LOVIA_TEST_NAP"] = str(nap)
        os.environ["LOVIA_TEST_THINK"] = str(think)
        db = str(tmp_path / "lovia.db")
        command = [str(LOVIA), "web", "--app", "tests.web.apps:listening", "--db", db]
        proc, base = _start([*command, "--lease-ttl", "1"])
        procs.append(proc)
        return base, proc

    try:
        yield run
    finally:
        for proc in procs:
            _stop(proc)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


async def sse(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The chat stream's events as they arrive: ``{"event": name, **data}``."""
    assert response.status_code == 200, await response.aread()
    name = "message"
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            yield {"event": name, **json.loads(line[5:])}


def send(chat: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"message": text, "session_id": chat, **extra}


async def until(events: AsyncIterator[dict[str, Any]], *types: str) -> list[dict[str, Any]]:
    """Read ``events`` (from ``sse``) until the given types were seen in that order."""
    seen: list[dict[str, Any]] = []
    wanted = list(types)
    async for event in events:
        seen.append(event)
        if wanted and event["event"] == wanted[0]:
            wanted.pop(0)
            if not wanted:
                return seen
    raise AssertionError(f"the stream ended before {wanted}: {[e['event'] for e in seen]}")


def segments(tmp_path: Path, chat: str) -> list[Any]:
    async def read() -> list[Any]:
        async with SQLiteSession(tmp_path / "lovia.db", wal=True) as s:
            return await s.segments(chat)

    return asyncio.run(read())


def users(segs: list[Any]) -> list[list[str]]:
    return [[e.text for e in s.entries if e.type == "input"] for s in segs]


def test_a_message_sent_while_a_run_is_live_joins_that_run(start: Any, tmp_path: Path) -> None:
    base, _ = start(nap=1)

    async def scenario() -> tuple[list[dict[str, Any]], httpx.Response]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as c:
            async with c.stream("POST", "/api/chat/stream", json=send("j", "a")) as first:
                first_events = sse(first)
                await until(first_events, "tool_call")
                second = await c.post("/api/chat/stream", json=send("j", "b"))
                rest = [e async for e in first_events]
            return rest, second

    rest, second = asyncio.run(scenario())
    assert second.status_code == 200 and second.headers["x-lovia-joined"] == "1"
    joined = decode(second.text)
    kinds = [e["event"] for e in joined]
    assert kinds[:2] == ["session", "snapshot"]  # then the run, replayed from its start
    queued = next(e for e in joined if e["event"] == "user_queued")
    assert queued["content"] == "b"
    assert "user_injected" in kinds and kinds[-1] == "done"
    assert joined[-1]["output"] == "heard: a | b"
    joined[-1].pop("frame_id")
    assert rest[-1] == joined[-1]  # the first request follows the same run to its end
    assert users(segments(tmp_path, "j")) == [["a", "b"]]  # one run answered both


def test_a_message_not_yet_read_is_kept_when_the_run_is_stopped(start: Any, tmp_path: Path) -> None:
    base, _ = start(nap=30)

    async def scenario() -> Any:
        async with httpx.AsyncClient(base_url=base, timeout=30) as c:
            async with c.stream("POST", "/api/chat/stream", json=send("s", "a")) as first:
                first_events = sse(first)
                await until(first_events, "tool_call")
                async with c.stream("POST", "/api/chat/stream", json=send("s", "b")) as second:
                    second_events = sse(second)
                    await until(second_events, "user_queued")
                    return await c.post("/api/chat/cancel?session_id=s")

    stopped = asyncio.run(scenario())
    assert stopped.status_code == 200
    [seg] = segments(tmp_path, "s")
    assert seg.meta is not None and seg.meta["ended"] == "stopped"
    timing = seg.meta["timing"]  # timed from the run's start, as a finished run is
    assert timing["started_at"] <= timing["finished_at"]
    assert [e.type for e in seg.entries] == ["input", "input"]  # the cut nap call is dropped
    assert users([seg]) == [["a", "b"]]


def test_a_message_read_by_the_run_is_kept_when_it_is_stopped(start: Any, tmp_path: Path) -> None:
    base, _ = start(nap=1.5)

    async def scenario() -> Any:
        async with httpx.AsyncClient(base_url=base, timeout=30) as c:
            async with c.stream("POST", "/api/chat/stream", json=send("s", "a")) as first:
                first_events = sse(first)
                await until(first_events, "tool_call")
                async with c.stream("POST", "/api/chat/stream", json=send("s", "b")) as second:
                    second_events = sse(second)
                    await until(second_events, "user_injected", "tool_call")
                    return await c.post("/api/chat/cancel?session_id=s")

    assert asyncio.run(scenario()).status_code == 200
    [seg] = segments(tmp_path, "s")
    assert seg.meta is not None and seg.meta["ended"] == "stopped"
    timing = seg.meta["timing"]  # timed from the run's start, as a finished run is
    assert timing["started_at"] <= timing["finished_at"]
    assert [e.type for e in seg.entries] == ["input", "tool_call", "tool_result", "input"]
    assert users([seg]) == [["a", "b"]]


def test_a_message_read_before_a_crash_is_in_the_resumed_run(start: Any, tmp_path: Path) -> None:
    base, proc = start(nap=1.5)

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as c:
            async with c.stream("POST", "/api/chat/stream", json=send("k", "a")) as first:
                first_events = sse(first)
                await until(first_events, "tool_call")
                async with c.stream("POST", "/api/chat/stream", json=send("k", "c")) as second:
                    second_events = sse(second)
                    await until(second_events, "user_injected", "tool_call")
                    proc.send_signal(signal.SIGKILL)  # a crash during the second nap
                    proc.wait(timeout=10)

    with contextlib.suppress(httpx.HTTPError):  # the server is gone mid-stream
        asyncio.run(scenario())
    assert proc.poll() is not None
    base2, _ = start(nap=0.1)
    pending = httpx.get(f"{base2}/api/sessions/k").json()["pending"]
    assert [e["content"] for e in pending["entries"] if e["type"] == "input"] == ["a", "c"]
    done = httpx.post(f"{base2}/api/chat/reconnect?session_id=k", timeout=30)
    final = decode(done.text)[-1]
    assert final["event"] == "done" and final["output"] == "heard: a | c"
    assert users(segments(tmp_path, "k")) == [["a", "c"]]


def test_a_message_too_late_for_the_last_turn_gets_its_own_run(start: Any, tmp_path: Path) -> None:
    """Sent while the run writes its final answer (after its last turn began), the message
    is answered by a run started at once, holding the chat all along."""
    base, _ = start(nap=0.3, think=2)

    async def scenario() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as c:
            async with c.stream("POST", "/api/chat/stream", json=send("l", "a")) as first:
                first_events = sse(first)
                await until(first_events, "tool_result", "turn_started")
                await c.post("/api/chat/stream", json=send("l", "b"))
                return [e async for e in first_events]

    events = asyncio.run(scenario())
    # one stream, two runs: the first ends, the one that answers the late message follows
    ends = [e for e in events if e["event"] == "done"]
    assert [e["output"] for e in ends] == ["heard: a", "heard: a | b"]
    assert ends[0]["next_run_id"]
    late = [e for e in events if e["event"] == "user_injected"]
    assert [e["content"] for e in late] == ["b"]
    assert users(segments(tmp_path, "l")) == [["a"], ["b"]]


def test_a_message_for_a_run_on_another_server_is_refused_and_not_written(
    start: Any, tmp_path: Path
) -> None:
    a, _ = start(nap=2)
    b, _ = start(nap=2)

    async def scenario() -> httpx.Response:
        async with httpx.AsyncClient(timeout=30) as c:
            async with c.stream("POST", f"{a}/api/chat/stream", json=send("o", "a")) as r:
                r_events = sse(r)
                await until(r_events, "tool_call")
                refused = await c.post(f"{b}/api/chat/stream", json=send("o", "b"))
                rest = [e async for e in r_events]
            assert rest[-1]["output"] == "heard: a"
            return refused

    refused = asyncio.run(scenario())
    assert refused.status_code == 409, refused.text
    assert "another server" in refused.json()["detail"]["message"]
    assert refused.json()["detail"]["code"] == "run_active"
    assert users(segments(tmp_path, "o")) == [["a"]]


def test_a_message_that_cannot_be_sent_does_not_join_the_live_run(
    start: Any, tmp_path: Path
) -> None:
    """A refused message changes nothing, live run or not: an unknown agent, or a message of
    invisible characters only, is refused and the run hears only what it was sent."""
    base, _ = start(nap=1.5)

    async def scenario() -> tuple[list[httpx.Response], list[dict[str, Any]]]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as c:
            async with c.stream("POST", "/api/chat/stream", json=send("r", "a")) as first:
                first_events = sse(first)
                await until(first_events, "tool_call")
                refused = [
                    await c.post("/api/chat/stream", json=send("r", "b", agent="nope")),
                    await c.post("/api/chat/stream", json=send("r", "\u200b\u00a0\u2060")),
                ]
                rest = [e async for e in first_events]
            return refused, rest

    refused, rest = asyncio.run(scenario())
    assert [r.status_code for r in refused] == [404, 422], [r.text for r in refused]
    assert "queued" not in " ".join(e["event"] for e in rest)
    assert rest[-1]["output"] == "heard: a"
    assert users(segments(tmp_path, "r")) == [["a"]]
