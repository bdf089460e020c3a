"""0.9.119's run bookkeeping, seen through the HTTP API: a parked run is listed by
``/api/runs`` as ``blocked_on_approval``, a stopped run's record reads ``cancelled``, a new
run drops the run a chat's pointer named before it, and ``ChatUI`` assets are revalidated."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from lovia import Agent, InputEntry, RunHead, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.web import ChatStore, ChatUI

from .conftest import decode, until, web_app


async def test_a_run_parked_for_approval_is_listed_as_blocked_on_approval(
    client_for: Any,
) -> None:
    @tool(needs_approval=True)
    async def pay() -> str:
        """Pays."""
        return "paid"

    model = ScriptedProvider([call("pay", {}, call_id="c1"), text("ack")])
    client = client_for(web_app(Agent(name="bot", model=model, tools=[pay])))
    body = {"message": "go", "session_id": "s1"}
    stream = asyncio.create_task(client.post("/api/chat/stream", json=body))

    async def parked() -> Any:
        runs = (await client.get("/api/runs")).json()
        return [r for r in runs if r["status"] == "blocked_on_approval"]

    (run,) = await until(parked)
    assert run["session_id"] == "s1" and run["agent"] == "bot"
    decision = {"session_id": "s1", "call_id": "c1", "decision": "approve"}
    assert (await client.post("/api/chat/approve", json=decision)).status_code == 200
    await asyncio.wait_for(stream, 30)

    async def gone() -> bool:
        return (await client.get("/api/runs")).json() == []

    await until(gone)


async def test_a_stopped_runs_record_reads_cancelled(client_for: Any) -> None:
    release = asyncio.Event()

    @tool
    async def wait() -> str:
        """Waits."""
        await release.wait()
        return "done"

    model = ScriptedProvider([call("wait", {}, call_id="c1"), text("ok")])
    client = client_for(web_app(Agent(name="bot", model=model, tools=[wait])))
    body = {"message": "go", "session_id": "s1"}
    stream = asyncio.create_task(client.post("/api/chat/stream", json=body))

    async def live() -> bool:
        return bool((await client.get("/api/runs")).json())

    await until(live)
    assert (await client.post("/api/chat/cancel", params={"session_id": "s1"})).status_code == 200
    release.set()
    await asyncio.wait_for(stream, 30)

    async def recorded() -> Any:
        rows = (await client.get("/api/runs/history", params={"session_id": "s1"})).json()
        return [r for r in rows if r["status"] != "running"]

    (row,) = await until(recorded)
    assert (row["status"], row["error"]) == ("cancelled", "cancelled")


async def test_a_new_run_drops_the_run_the_chats_pointer_named(client_for: Any) -> None:
    store = ChatStore.in_memory()
    await store.upsert("s1", agent="bot")
    head = RunHead(agent_name="bot", turns=1, status="interrupted")  # names no chat
    await store.checkpointer.append("old-run", [InputEntry(role="user", content="q")], head)
    await store.set_active_run_id("s1", "old-run")
    agent = Agent(name="bot", model=ScriptedProvider([text("hi")]))
    client = client_for(web_app(agent, store=store))
    answer = await client.post("/api/chat", json={"message": "hello", "session_id": "s1"})
    assert answer.status_code == 200, answer.text
    assert await store.checkpointer.load("old-run") is None
    assert await store.get_active_run_id("s1") != "old-run"


async def test_ui_assets_answer_304_while_unchanged(client_for: Any, tmp_path: Path) -> None:
    theme = tmp_path / "theme.css"
    theme.write_text("body{}", encoding="utf-8")
    agent = Agent(name="bot", model=ScriptedProvider([text("hi")]))
    client = client_for(web_app(agent, ui=ChatUI(assets=tmp_path)))
    first = await client.get("/ui/theme.css")
    assert first.status_code == 200 and first.headers["cache-control"] == "no-cache"
    etag = first.headers["etag"]
    again = await client.get("/ui/theme.css", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    theme.write_text("body{color:red}", encoding="utf-8")
    changed = await client.get("/ui/theme.css", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.text == "body{color:red}"


async def test_a_reconnect_to_a_parked_chat_follows_the_run_its_approval_resumes(
    client_for: Any,
) -> None:
    """The resumed run is over within milliseconds; the reconnected stream still carries
    it to its ``done`` (five chats, so a stream that looks for the run too late fails)."""

    @tool(needs_approval=True)
    async def pay() -> str:
        """Pays."""
        return "paid"

    script = [t for n in range(5) for t in (call("pay", {}, call_id=f"c{n}"), text(f"ack {n}"))]
    model = ScriptedProvider(script)
    client = client_for(web_app(Agent(name="bot", model=model, tools=[pay])))

    async def parked() -> Any:
        runs = (await client.get("/api/runs")).json()
        return [r for r in runs if r["status"] == "blocked_on_approval"]

    for n in range(5):
        body = {"message": "go", "session_id": f"s{n}"}
        first = asyncio.create_task(client.post("/api/chat/stream", json=body))
        await until(parked)
        first.cancel()  # the client goes away while the call waits
        with contextlib.suppress(asyncio.CancelledError):
            await first
        params = {"session_id": f"s{n}"}
        again = asyncio.create_task(client.post("/api/chat/reconnect", params=params))
        await asyncio.sleep(0.1)
        decision = {"session_id": f"s{n}", "call_id": f"c{n}", "decision": "approve"}
        assert (await client.post("/api/chat/approve", json=decision)).status_code == 200
        events = decode((await asyncio.wait_for(again, 10)).text)
        kinds = [e["event"] for e in events]
        assert kinds[:2] == ["session", "snapshot"] and "approval_required" in kinds
        assert kinds[-1] == "done" and events[-1]["output"] == f"ack {n}"
        assert any(e.get("result") == "paid" for e in events if e["event"] == "tool_result")
