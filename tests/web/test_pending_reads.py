"""A chat request reads that chat's unfinished runs only (issue 14, item 13): with many
failed runs in other chats, opening, sending to, stopping or resuming one chat never asks
the checkpointer for the other chats' runs; and the chat list reads runs' heads only (a run's
entries are read once, for its chat's title, when no session has that chat)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import InputEntry, RunHead, SQLiteCheckpointer, SQLiteSession
from lovia.demo import demo_agent
from lovia.web import create_app

from .conftest import events_of


class Recording(SQLiteCheckpointer):
    """The real SQLite checkpointer, noting how each listing was asked and what was loaded."""

    asked: list[dict[str, Any]]
    full: list[dict[str, Any]]
    loaded: list[str]

    async def list_run_heads(self, **kwargs: Any) -> Any:
        self.asked.append(kwargs)
        return await super().list_run_heads(**kwargs)

    async def list_runs(self, **kwargs: Any) -> Any:
        self.full.append(kwargs)
        return await super().list_runs(**kwargs)

    async def load(self, run_id: str) -> Any:
        self.loaded.append(run_id)
        return await super().load(run_id)


async def test_a_chat_request_reads_only_that_chats_runs(client_for: Any, tmp_path: Path) -> None:
    db = tmp_path / "lovia.db"
    cp = Recording(db, wal=True)
    cp.asked, cp.full, cp.loaded = [], [], []
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
    assert cp.asked, "the chat's unfinished run is looked up through list_run_heads"
    assert all(kwargs.get("session_id") == "mine" for kwargs in cp.asked), cp.asked
    assert not cp.full, "no request reads every run with its entries"
    assert not [r for r in cp.loaded if r.startswith("o")], "no other chat's run is read"

    # the chat list and the resumable runs still see every chat
    cp.loaded.clear()
    chats = (await client.get("/api/chats")).json()
    listed = {c["id"]: c for c in chats}
    assert {f"other{i}" for i in range(40)} <= set(listed)
    assert listed["other7"]["title"] == "x" * 79 + "…"  # the run's first message
    assert listed["other7"]["pending"]["status"] == "failed"
    resumable = (await client.get("/api/runs/resumable")).json()
    assert len(resumable) == 40 and all(r["title"] for r in resumable)
    assert sorted(cp.loaded) == sorted(f"o{i}" for i in range(40))  # each title read once

    cp.loaded.clear()
    assert (await client.get("/api/chats")).json() == chats
    assert len((await client.get("/api/runs/resumable")).json()) == 40
    assert cp.loaded == [], "the chat list reads heads only once titles are known"
    assert not cp.full
    await session.close()
    await cp.close()
