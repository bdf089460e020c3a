"""``lovia sessions clear``, ``rewind`` and ``trim`` leave a conversation alone while another
process answers it (issue 14, finding 12: ``runs delete`` and ``runs prune`` already did;
``sessions clear`` still deleted a live chat and the checkpoint of its running run).

A real ``lovia web`` answers a chat (its run waits in a tool); the commands are refused with
the holder named, and the chat and its run are byte for byte as they were. A worker driving
a run of a session (its lease only, no web server) is respected the same way."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lovia.checkpointer import RunHead
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.transcript import InputEntry

from ..web_server import ROOT, start_web

LOVIA = Path(sys.executable).with_name("lovia")
CHANGING = [("clear",), ("rewind", "--keep", "0"), ("trim",)]


def lovia(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LOVIA), *args], capture_output=True, text=True, timeout=60, cwd=ROOT)


def digest(path: Path, chat_id: str) -> str:
    """The chat as exported plus the runs' list: what a refused command must not change."""
    export = lovia("sessions", "export", chat_id, "--db", str(path))
    runs = lovia("runs", "list", "--db", str(path), "--json")
    assert export.returncode == 0 and runs.returncode == 0, export.stderr + runs.stderr
    return hashlib.sha256((export.stdout + runs.stdout).encode()).hexdigest()


@pytest.fixture
def busy_server(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A ``lovia web`` whose answer to chat ``c1`` waits in a tool (``LOVIA_TEST_BLOCK``)."""
    db = tmp_path / "web.db"
    env = dict(os.environ, LOVIA_TEST_BLOCK="1")
    command = [str(LOVIA), "web", "--app", "tests.web.apps:agents", "--db", str(db)]
    proc, base = start_web(command, env=env, quiet=True)
    try:
        deadline = time.monotonic() + 30
        body = {"message": "answer me", "session_id": "c1"}
        url = f"{base}/api/chat/stream"

        def send() -> None:
            with contextlib.suppress(httpx.HTTPError):  # cut off when the server is killed
                httpx.post(url, json=body, timeout=600)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        while "running" not in lovia("runs", "list", "--db", str(db)).stdout:
            assert time.monotonic() < deadline and proc.poll() is None, "no run"
            time.sleep(0.1)
        yield db, base
    finally:
        proc.kill()
        proc.wait()


def test_a_chat_a_server_is_answering_is_not_cleared_rewound_or_trimmed(
    busy_server: tuple[Path, str],
) -> None:
    db, base = busy_server
    before = digest(db, "c1")
    for command in CHANGING:
        done = lovia("sessions", command[0], "c1", *command[1:], "--db", str(db))
        assert done.returncode == 2, done.stdout + done.stderr
        assert "being answered by" in done.stderr and "hint:" in done.stderr
        assert "Traceback" not in done.stderr
    assert digest(db, "c1") == before
    assert httpx.get(f"{base}/api/sessions/c1").json()["live"] is not None  # still answering
    asyncio.run(_store_chat(db, "another-chat"))
    other = lovia("sessions", "clear", "another-chat", "--db", str(db))
    assert other.returncode == 0, other.stderr  # only the busy chat is refused


async def _store_chat(path: Path, chat_id: str) -> None:
    async with SQLiteSession(path, wal=True) as session:
        await session.append(chat_id, [InputEntry(content="hello")], run_id=f"{chat_id}-run")


async def test_a_session_whose_run_a_worker_drives_is_not_cleared(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    async with (
        SQLiteSession(path, wal=True) as session,
        SQLiteCheckpointer(path, wal=True) as worker,
    ):
        await session.append("s1", [InputEntry(content="first")], run_id="r1")
        await worker.append("r2", [InputEntry(content="second")], RunHead("a", session_id="s1"))
        assert await worker.acquire_lease("r2", "worker-on-host-b", 30.0)
        before = digest(path, "s1")
        done = lovia("sessions", "clear", "s1", "--db", str(path))
        assert done.returncode == 2 and "worker-on-host-b" in done.stderr, done.stderr
        assert digest(path, "s1") == before
        await worker.release_lease("r2", "worker-on-host-b")
        done = lovia("sessions", "clear", "s1", "--db", str(path))
        assert done.returncode == 0, done.stderr
        assert await session.load("s1") == [] and await worker.load("r2") is None
