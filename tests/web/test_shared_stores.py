"""Two servers on one pair of stores: neither settles (stop, new message) a run the other
drives, so the driving server's answer is never lost (S6, S12)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    AssistantTextEntry,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCallEntry,
    ToolResultEntry,
    tool,
)
from lovia.testing import ScriptedProvider, call, text
from lovia.web import ChatStore

from .conftest import chat_path, detail_of, events_of, message, sid, web_app


def _held_agent() -> tuple[Agent, asyncio.Event, asyncio.Event]:
    """An agent whose ``wait`` tool signals ``started`` and returns once ``go`` is set."""
    started, go = asyncio.Event(), asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait for the test to let the run go on."""
        started.set()
        await go.wait()
        return "waited"

    model = ScriptedProvider([call("wait", {}), text("the full answer")])
    return Agent("held", model=model, tools=[wait]), started, go


def _two_servers(kind: str, tmp_path: Path) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    if kind == "memory":
        shared = (InMemorySession(), InMemoryCheckpointer())
        return shared, shared
    db = tmp_path / "shared.db"
    return (
        (SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)),
        (SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)),
    )


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_stop_on_another_server_refuses_and_keeps_the_run_whole(
    client_for: Any, tmp_path: Path, kind: str
) -> None:
    """S6/S12: server 2 answers 409 to stop, a new message, edit, regenerate and delete while
    server 1 drives the chat's run; nothing is written, and server 1's answer lands whole."""
    agent, started, go = _held_agent()
    (session1, cp1), (session2, cp2) = _two_servers(kind, tmp_path)
    one = client_for(web_app(agent, store=ChatStore(session1, checkpointer=cp1)))
    two = client_for(web_app(agent, store=ChatStore(session2, checkpointer=cp2)))
    sending = asyncio.ensure_future(one.post("/api/chat/stream", json=message("c", "go")))
    await started.wait()

    assert (await two.get(chat_path("c"))).json()["busy_elsewhere"] is True
    assert (await one.get(chat_path("c"))).json()["busy_elsewhere"] is False
    stop = await two.post(f"/api/chat/cancel{sid('c')}")
    assert stop.status_code == 409, stop.text
    assert "busy" in detail_of(stop.json())["message"]
    assert detail_of(stop.json())["code"] == "run_active"
    for path, body in [
        ("/api/chat/stream", message("c", "meanwhile")),
        ("/api/chat", message("c", "meanwhile")),
        (chat_path("c", "/rewind"), {"user_turn": 0}),
    ]:
        refused = await two.post(path, json=body)
        assert refused.status_code == 409, (path, refused.text)
    joined = await two.post("/api/chat/inject", json={"session_id": "c", "message": "x"})
    assert joined.json() == {"accepted": False}  # not this server's run to join
    assert (await two.delete(chat_path("c"))).status_code == 409
    assert await session2.load("c") == []
    pending = (await two.get("/api/runs/resumable")).json()
    assert [r["session_id"] for r in pending] == ["c"]  # the checkpoint is still there
    assert pending[0]["busy_elsewhere"] is True  # and the page says it is answered elsewhere

    go.set()
    events = events_of(await sending)
    assert events[-1]["event"] == "done"
    stored = await session2.load("c")
    assert [type(e) for e in stored] == [
        InputEntry,
        ToolCallEntry,
        ToolResultEntry,
        AssistantTextEntry,
    ]
    assert isinstance(stored[-1], AssistantTextEntry) and stored[-1].content == "the full answer"
    nothing = await two.post(f"/api/chat/cancel{sid('c')}")  # nothing left to settle
    assert nothing.json() == {"ok": True, "stopped": None}
    assert (await two.get(chat_path("c"))).json()["busy_elsewhere"] is False
    if kind == "sqlite":
        for store in (session1, cp1, session2, cp2):
            await store.close()
