"""`lovia web` as a real process on a database a program already wrote: every refused
request answers `{"detail", "hint"}` with a hint to act on, and changes nothing stored."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import pytest

from lovia import Agent, InputEntry, RunHead, Runner, SQLiteCheckpointer, SQLiteSession, Usage
from lovia.testing import ScriptedProvider, text

from ..web_server import ROOT, start_web, stop_web


async def _write(db: Path) -> None:
    session = SQLiteSession(db, wal=True)
    for sid in ("u1", "alice@example.com"):
        agent = Agent("assistant", model=ScriptedProvider([text(f"hello {sid}")]))
        await Runner.run(agent, "hi", session=session, session_id=sid)
    await session.close()


def dump(db: Path) -> list[str]:
    with closing(sqlite3.connect(db)) as conn:
        return [line for line in conn.iterdump() if "lease" not in line and "claim" not in line]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db = tmp_path / "chats.db"
    asyncio.run(_write(db))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("LOVIA_WEB_TOKEN", None)
    command = [sys.executable, "-m", "lovia", "web", "--demo", "--db", str(db)]
    proc, base = start_web(command, env=env, quiet=True)
    try:
        yield base, db
    finally:
        stop_web(proc)


REFUSED = [
    ("GET", "/api/chats/nope", None, 404),
    ("GET", "/api/chats/nope/events", None, 404),
    ("GET", "/api/chats/u1/events", None, 404),
    ("POST", "/api/chats/nope/stop", None, 409),
    ("POST", "/api/chats/u1/stop", None, 409),
    ("POST", "/api/chats/nope/resume", None, 404),
    ("POST", "/api/chats/u1/resume", None, 404),
    ("POST", "/api/chats/nope/regenerate", None, 400),
    ("POST", "/api/chats/u1/edit", {"index": 1, "content": "x"}, 400),
    ("POST", "/api/chats/u1/edit", {"index": 99, "content": "x"}, 400),
    ("POST", "/api/chats/u1/edit", {"index": "first", "content": "x"}, 422),
    ("POST", "/api/chats/u1/messages", {"content": 5}, 422),
    ("POST", "/api/chats/u1/messages", {"content": "hi", "agent": "ghost"}, 400),
    ("POST", "/api/chats/u1/approvals/c1", {"approve": True}, 409),
    ("POST", "/api/chats/u1/approvals/c1", {"approve": "yes"}, 422),
    ("POST", "/api/chat", {"message": ["hi"]}, 422),
    ("GET", "/api/chats/alice%01example.com", None, 422),
    ("GET", "/api/chats/alice%2Fexample.com", None, 400),
]


def test_each_refusal_says_what_to_do_and_changes_nothing(server: tuple[str, Path]) -> None:
    base, db = server
    before = dump(db)
    listed = httpx.get(f"{base}/api/chats").json()
    assert {c["id"] for c in listed} == {"u1", "alice@example.com"}
    for method, path, body, status in REFUSED:
        answer = httpx.request(method, base + path, json=body, timeout=30)
        assert answer.status_code == status, (method, path, answer.text)
        data = answer.json()
        assert isinstance(data["detail"], str) and data["detail"], (path, data)
        assert isinstance(data.get("hint"), str) and data["hint"], (path, data)
    assert dump(db) == before
    assert httpx.get(f"{base}/api/chats").json() == listed


def test_a_program_written_session_goes_on_through_the_0_9_119_route(
    server: tuple[str, Path],
) -> None:
    base, _db = server
    answer = httpx.post(
        f"{base}/api/chat", json={"message": "calculate 6 * 7", "session_id": "u1"}, timeout=60
    )
    assert answer.status_code == 200, answer.text
    assert "42" in answer.json()["output"] and answer.json()["session_id"] == "u1"
    chat = httpx.get(f"{base}/api/chats/u1").json()
    texts = [e.get("content") for e in chat["entries"]]
    assert texts[:2] == ["hi", "hello u1"] and "calculate 6 * 7" in texts


async def _write_with_a_parked_run(db: Path) -> None:
    await _write(db)
    cp = SQLiteCheckpointer(db, wal=True)
    head = RunHead(agent_name="assistant", usage=Usage(), turns=1, session_id="u2")
    await cp.append("job-u2", [InputEntry(role="user", content="pay the invoice")], head)
    await cp.close()


def test_damaged_rows_leave_the_chat_list_working_and_their_chats_deletable(
    tmp_path: Path,
) -> None:
    db = tmp_path / "chats.db"
    asyncio.run(_write_with_a_parked_run(db))
    with closing(sqlite3.connect(db)) as conn:  # the run's entries and u1's segment: not JSON
        conn.execute("UPDATE checkpoint_batches SET entries = x'00ff'")
        conn.execute("UPDATE lovia_session_segments SET entries = '{oops' WHERE session_id = 'u1'")
        conn.commit()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, "-m", "lovia", "web", "--demo", "--db", str(db)]
    proc, base = start_web(command, env=env, quiet=True)
    try:
        listed = httpx.get(f"{base}/api/chats", timeout=30)
        assert listed.status_code == 200, listed.text
        assert {c["id"] for c in listed.json()} == {"u1", "u2", "alice@example.com"}
        broken = httpx.get(f"{base}/api/chats/u2", timeout=30)
        assert broken.status_code == 500 and "job-u2" in broken.json()["detail"]
        assert broken.json()["hint"]
        for chat in ("u1", "u2"):
            assert httpx.delete(f"{base}/api/chats/{chat}", timeout=30).status_code == 200
        left = httpx.get(f"{base}/api/chats", timeout=30).json()
        assert [c["id"] for c in left] == ["alice@example.com"]
    finally:
        stop_web(proc)
