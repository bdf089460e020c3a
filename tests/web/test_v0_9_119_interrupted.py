"""A 0.9.119 chat database whose server stopped mid-run: the run's checkpoint does not name
its chat (0.9.119's heads never did), its chat's ``active_run_id`` does. Opened here, the
run is the chat's unfinished one: its message is shown under ``pending`` and it resumes,
as 0.9.119's page offered it (tests/fixtures/v0_9_119_web.sqlite, written by 0.9.119's
``lovia web``, plus that run's rows as 0.9.119 writes them)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatStore

from .conftest import events_of, sid, web_app

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v0_9_119_web.sqlite"
CHAT = "eb8ab8a995674a02955d253ab5f12e5c"


def stopped_mid_run(db: Path) -> None:
    """Add what 0.9.119 leaves of a run its server stopped after its first turn."""
    head = {
        "agent_name": "helper",
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "turns": 1,
        "status": "interrupted",
        "output": None,
        "error": None,
        "context_state": {},
        "updated_at": 1796668895.0,
        "started_at": None,
    }
    said = [{"type": "input", "role": "user", "content": "and Spain?"}]
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO snapshot_heads (run_id, head_json, updated_at) VALUES (?, ?, ?)",
            ("r-stopped", json.dumps(head), head["updated_at"]),
        )
        conn.execute(
            "INSERT INTO snapshot_turns (run_id, seq, entries_json) VALUES (?, 0, ?)",
            ("r-stopped", json.dumps(said)),
        )
        conn.execute("UPDATE chat_sessions SET active_run_id = ? WHERE id = ?", ("r-stopped", CHAT))


async def test_a_run_its_0_9_119_server_left_unfinished_is_the_chats_and_resumes(
    tmp_path: Path, client_for: Any
) -> None:
    db = tmp_path / "helper.db"
    shutil.copy(FIXTURE, db)
    stopped_mid_run(db)
    agent = Agent(name="helper", model=ScriptedProvider([text("Madrid.")]))
    client = client_for(web_app({"helper": agent}, store=ChatStore.sqlite(db)))

    pending = (await client.get(f"/api/sessions/{CHAT}")).json()["pending"]
    assert pending is not None and pending["run_id"] == "r-stopped"
    assert [m["content"] for m in pending["messages"]] == ["and Spain?"]
    resumable = (await client.get("/api/runs/resumable")).json()
    assert [(r["run_id"], r["session_id"]) for r in resumable] == [("r-stopped", CHAT)]

    events = events_of(await client.post(f"/api/chat/reconnect{sid(CHAT)}"))
    assert events[-1]["event"] == "done" and events[-1]["output"] == "Madrid."
    said = [m["content"] for m in (await client.get(f"/api/sessions/{CHAT}")).json()["entries"]]
    assert said[-2:] == ["and Spain?", "Madrid."]
