"""A chat request reads that chat's unfinished runs only (issue 14, item 13): with many
failed runs in other chats, opening, sending to, stopping or resuming one chat never asks
the checkpointer for the other chats' runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import InputEntry, RunHead, SQLiteCheckpointer, SQLiteSession
from lovia.demo import demo_agent
from lovia.web import create_app

from .conftest import events_of


class Recording(SQLiteCheckpointer):
    """The real SQLite checkpointer, noting how each ``list_runs`` was asked."""

    asked: list[dict[str, Any]]

    async def list_runs(self, **kwargs: Any) -> Any:
        self.asked.append(kwargs)
        return await super().list_runs(**kwargs)


async def test_a_chat_request_reads_only_that_chats_runs(client_for: Any, tmp_path: Path) -> None:
    db = tmp_path / "lovia.db"
    cp = Recording(db, wal=True)
    cp.asked = []
    session = SQLiteSession(db, wal=True)
    for i in range(40):
        head = RunHead("demo", status="failed", session_id=f"other{i}", error={"type": "X"})
        await cp.append(f"o{i}", [InputEntry(content="x" * 2000)], head)
    head = RunHead("demo", status="failed", session_id="mine", error={"type": "ProviderError"})
    await cp.append("m1", [InputEntry(content="calculate 6 * 7")], head)
    client = client_for(create_app(demo_agent(delay=0), session=session, checkpointer=cp))

    cp.asked.clear()
    detail = (await client.get("/api/chats/mine")).json()
    assert detail["pending"]["run_id"] == "m1"
    resumed = events_of(await client.post("/api/chats/mine/resume"))
    assert "42" in resumed[-1]["result"]["output"]
    sent = events_of(await client.post("/api/chats/mine/messages", json={"content": "hi"}))
    assert sent[-1]["type"] == "run_completed"
    assert (await client.post("/api/chats/mine/stop")).status_code == 409  # nothing to stop
    assert cp.asked, "the chat's unfinished run is looked up through list_runs"
    assert all(kwargs.get("session_id") == "mine" for kwargs in cp.asked), cp.asked

    # the chat list and the resumable runs still see every chat
    listed = {c["id"] for c in (await client.get("/api/chats")).json()}
    assert {f"other{i}" for i in range(40)} <= listed
    assert len((await client.get("/api/runs/resumable")).json()) == 40
    await session.close()
    await cp.close()
