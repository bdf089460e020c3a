"""Issue 33: the web page's fork is the session store's fork: one transaction that copies the
chat, whose origin the store lists like that of any other fork."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from lovia import Agent, Runner, SQLiteSession
from lovia.testing import ScriptedProvider, text

from ..web_server import ROOT, start_web, stop_web


async def _write(db: Path) -> None:
    session = SQLiteSession(db, wal=True)
    for n in range(2):
        agent = Agent("assistant", model=ScriptedProvider([text(f"answer {n}")]))
        await Runner.run(agent, f"question {n}", session=session, session_id="u1")
    await session.close()


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


async def _read(db: Path) -> tuple[dict[str, list[str]], dict[str, object]]:
    session = SQLiteSession(db, wal=True)
    try:
        infos = await session.list_sessions()
        texts = {
            i.session_id: [
                getattr(e, "text", getattr(e, "content", ""))
                for e in await session.load(i.session_id)
            ]
            for i in infos
        }
        return texts, {i.session_id: i.forked_from for i in infos}
    finally:
        await session.close()


def test_the_page_fork_copies_the_chat_and_records_its_origin(server: tuple[str, Path]) -> None:
    base, db = server
    before, _ = asyncio.run(_read(db))
    reply = httpx.post(f"{base}/api/sessions/u1/fork", json={}, timeout=30)
    assert reply.status_code == 200, reply.text
    new = reply.json()["session_id"]
    texts, origins = asyncio.run(_read(db))
    assert texts[new] == texts["u1"] == before["u1"]  # a whole copy; the source unchanged
    assert origins == {"u1": None, new: {"session_id": "u1"}}
