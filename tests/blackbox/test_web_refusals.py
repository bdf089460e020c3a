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
    ("POST", "/api/chat/reconnect?session_id=nope", None, 404),
    ("POST", "/api/chat/reconnect?session_id=u1", None, 404),
    ("POST", "/api/sessions/nope/rewind", {"user_turn": 0}, 404),
    ("POST", "/api/sessions/u1/rewind", {"user_turn": 5}, 404),
    ("POST", "/api/sessions/u1/rewind", {"ref": "not-a-run:0"}, 404),
    ("POST", "/api/sessions/u1/rewind", {"user_turn": "first"}, 422),
    ("POST", "/api/sessions/u1/fork", {"ref": "not-a-run:0"}, 404),
    ("POST", "/api/sessions/nope/fork", {}, 404),  # 0.9.119: session_not_found
    ("PATCH", "/api/sessions/nope", {"title": "x"}, 404),
    ("GET", "/api/sessions/u1/ui-data/abcdefghijklmnopqrst", None, 404),
    ("GET", "/api/sessions/u1/tool-images/c1/0", None, 404),
    ("GET", "/api/agents/ghost", None, 404),
    ("POST", "/api/chat/stream", {"message": 5, "session_id": "u1"}, 422),
    ("POST", "/api/chat/stream", {"message": "hi", "session_id": "u1", "agent": "ghost"}, 404),
    (
        "POST",
        "/api/chat/approve",
        {"session_id": "u1", "call_id": "c1", "decision": "approve"},
        404,
    ),
    ("POST", "/api/chat/approve", {"session_id": "u1", "call_id": "c1", "decision": "yes"}, 422),
    ("POST", "/api/chat/answer", {"session_id": "u1", "answer": "x"}, 404),
    ("POST", "/api/chat", {"message": ["hi"]}, 422),
    ("GET", "/api/sessions/alice%01example.com", None, 422),
    ("GET", "/api/sessions/alice%2Fexample.com", None, 400),
]


def test_each_refusal_says_what_to_do_and_changes_nothing(server: tuple[str, Path]) -> None:
    base, db = server
    listed = httpx.get(f"{base}/api/sessions").json()
    assert {c["id"] for c in listed} == {"u1", "alice@example.com"}
    before = dump(db)
    for method, path, body, status in REFUSED:
        answer = httpx.request(method, base + path, json=body, timeout=30)
        assert answer.status_code == status, (method, path, answer.text)
        data = answer.json()
        if status == 422 and isinstance(data["detail"], list):  # a body that does not fit
            assert data["detail"] and data["hint"], (path, data)
            continue
        said = data["detail"]
        assert said["code"] and said["message"] and said["hint"], (path, data)
    assert dump(db) == before
    assert httpx.get(f"{base}/api/sessions").json() == listed


def test_a_program_written_session_goes_on_through_the_0_9_119_route(
    server: tuple[str, Path],
) -> None:
    base, _db = server
    answer = httpx.post(
        f"{base}/api/chat", json={"message": "calculate 6 * 7", "session_id": "u1"}, timeout=60
    )
    assert answer.status_code == 200, answer.text
    assert "42" in answer.json()["output"] and answer.json()["session_id"] == "u1"
    chat = httpx.get(f"{base}/api/sessions/u1").json()
    texts = [m["content"] for m in chat["entries"]]
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
        listed = httpx.get(f"{base}/api/sessions", timeout=30)
        assert listed.status_code == 200, listed.text
        assert {c["id"] for c in listed.json()} == {"u1", "u2", "alice@example.com"}
        broken = httpx.get(f"{base}/api/sessions/u2", timeout=30)
        assert broken.status_code == 500 and "job-u2" in broken.json()["detail"]["message"]
        assert broken.json()["detail"]["hint"]
        for chat in ("u1", "u2"):
            assert httpx.delete(f"{base}/api/sessions/{chat}", timeout=30).status_code == 200
        left = httpx.get(f"{base}/api/sessions", timeout=30).json()
        assert [c["id"] for c in left] == ["alice@example.com"]
    finally:
        stop_web(proc)
