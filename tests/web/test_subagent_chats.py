"""A served agent's background subagents run as chats of the server: each child is a chat
under its parent's (its transcript and checkpoints in the server's stores, a run record with
source ``subagent:<task>``), and deleting the parent deletes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import Agent
from lovia.plugins import Subagents
from lovia.testing import ScriptedProvider, call, text
from lovia.web import ChatStore

from .conftest import web_app


async def test_a_child_runs_as_a_chat_under_its_parent(tmp_path: Path, client_for: Any) -> None:
    child = Agent(name="digger", model=ScriptedProvider([text("found it")]))
    parent = Agent(
        name="bot",
        model=ScriptedProvider(
            [
                call("spawn_subagent", {"prompt": "dig", "agent": "digger"}, call_id="c1"),
                call("wait_subagents", {}, call_id="c2"),
                text("parent done"),
            ]
        ),
        plugins=[Subagents(agents=[child])],
    )
    store = ChatStore.sqlite(tmp_path / "chats.db")
    c = client_for(web_app(parent, store=store))
    answer = await c.post("/api/chat", json={"message": "go"})
    assert answer.json()["output"] == "parent done", answer.text
    sid = answer.json()["session_id"]
    (kid,) = await store.list_children(sid)
    assert (kid.parent_id, kid.agent) == (sid, "digger")
    runs = await store.list_runs(session_id=kid.id)
    assert [(r.source.split(":")[0], r.status) for r in runs] == [("subagent", "completed")]
    said = [getattr(e, "content", None) for e in await store.session.load(kid.id)]
    assert "dig" in said and "found it" in said
    assert [s["id"] for s in (await c.get("/api/sessions")).json()] == [sid]  # under its parent
    assert (await c.delete(f"/api/sessions/{sid}")).status_code == 200
    assert await store.get(kid.id) is None
    assert await store.session.load(kid.id) == []
