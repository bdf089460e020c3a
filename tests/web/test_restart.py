"""A server killed mid-run: a new app on the same database offers the run and resumes it."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import (
    InputEntry,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCallEntry,
    ToolResultEntry,
)
from lovia.web import ChatStore

from ..web_server import serving
from .apps import agents
from .conftest import events_of, sid, web_app

LOVIA = Path(sys.executable).with_name("lovia")


@pytest.fixture
def killed_server(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """``lovia web`` in a subprocess, killed (SIGKILL) while a tool of chat "r" runs."""
    db = tmp_path / "lovia.db"
    env = {**os.environ, "LOVIA_TEST_BLOCK": "1"}
    command = [str(LOVIA), "web", "--app", "tests.web.apps:agents", "--db", str(db)]
    with serving([*command, "--lease-ttl", "1"], env=env) as (proc, base):
        body = {"message": "go", "session_id": "r"}
        with httpx.stream("POST", f"{base}/api/chat/stream", json=body, timeout=30) as response:
            run_id = response.headers["x-lovia-run-id"]
            for line in response.iter_lines():
                if line == "event: tool_call":
                    break
        proc.send_signal(signal.SIGKILL)  # a crash: nothing gets to mark the run
        proc.wait(timeout=10)
    yield db, run_id


async def test_a_new_app_on_the_same_database_resumes_the_interrupted_run(
    killed_server: tuple[Path, str], client_for: Any
) -> None:
    """C10 across processes: the page lists the run, and resume finishes it from its
    checkpoint; the dangling tool call runs again, the model input is not repeated."""
    db, run_id = killed_server
    session = SQLiteSession(db, wal=True)
    cp = SQLiteCheckpointer(db, wal=True)
    store = ChatStore(session, checkpointer=cp, meta_path=db)
    client = client_for(web_app(agents, store=store, lease_ttl=1))
    offered = (await client.get("/api/runs/resumable")).json()
    assert [(r["run_id"], r["session_id"], r["status"]) for r in offered] == [
        (run_id, "r", "running")
    ]
    chats = (await client.get("/api/sessions")).json()
    assert chats[0]["id"] == "r" and chats[0]["pending"]["status"] == "running"
    pending = (await client.get("/api/sessions/r")).json()["pending"]
    assert [e["type"] for e in pending["entries"]] == ["input", "tool_call"]
    resumed = await client.post(f"/api/chat/reconnect{sid('r')}")
    assert resumed.headers["x-lovia-run-id"] == run_id
    events = events_of(resumed)
    assert [e["event"] for e in events[:2]] == ["session", "snapshot"]
    assert events[-1]["event"] == "done"
    assert events[-1]["output"] == "finished after unblocked once"
    stored = await session.load("r")
    assert [type(e) for e in stored][:3] == [InputEntry, ToolCallEntry, ToolResultEntry]
    assert [e for e in stored if isinstance(e, InputEntry)] == [InputEntry(content="go")]
    snap = await cp.load(run_id)
    assert snap is not None and snap.status == "completed"
    assert (await client.get("/api/runs/resumable")).json() == []
    await session.close()
    await cp.close()
