"""A served chat keeps one workspace session across its runs (as 0.9.119's web server does):
a background process started in one run is still running in the next, ``GET
/api/sessions/{id}/processes`` lists it, ``.../kill`` stops it, and deleting the chat or
stopping the server ends it. Real processes in a real workspace folder."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from lovia import Agent
from lovia.testing import ScriptedProvider, call, text
from lovia.web import ChatStore
from lovia.workspace import Workspace

from .conftest import make_client, web_app

TICK = "while true; do date +%s%N >> tick.log; sleep 0.05; done"


def _agent(root: Path) -> Agent:
    model = ScriptedProvider(
        [
            call("shell", {"command": TICK, "background": True}, call_id="c1"),
            text("started"),
            text("second run"),
        ]
    )
    return Agent(name="bot", model=model, workspace=Workspace.local(str(root), mode="trusted"))


def _size(log: Path) -> int:
    return log.stat().st_size if log.exists() else 0


async def _ticking(log: Path) -> bool:
    """Whether the process still writes its log (two reads 0.4 s apart differ)."""
    before = _size(log)
    await asyncio.sleep(0.4)
    return _size(log) > before


async def _send(client: Any, message: str) -> None:
    sent = await client.post("/api/chat", json={"message": message, "session_id": "s1"})
    assert sent.status_code == 200, sent.text


async def test_a_background_process_outlives_its_run_and_ends_with_the_chat(
    tmp_path: Path,
) -> None:
    root = tmp_path / "work"
    root.mkdir()
    app = web_app(_agent(root), store=ChatStore.in_memory())
    async with app.router.lifespan_context(app), make_client(app) as client:
        assert (await client.get("/api/sessions/s1/processes")).json() == []
        await _send(client, "start it")
        [proc] = (await client.get("/api/sessions/s1/processes")).json()
        assert (proc["command"], proc["status"], proc["exit_code"]) == (TICK, "running", None)
        await _send(client, "again")  # a second run of the chat: the process goes on
        assert await _ticking(root / "tick.log")
        assert [p["status"] for p in (await client.get("/api/sessions/s1/processes")).json()] == [
            "running"
        ]
        unknown = await client.post("/api/sessions/s1/processes/nope/kill")
        assert (unknown.status_code, unknown.json()["detail"]["code"]) == (
            404,
            "process_not_found",
        )
        killed = await client.post(f"/api/sessions/s1/processes/{proc['process_id']}/kill")
        assert killed.status_code == 200 and killed.json()[0]["status"] == "killed"
        assert not await _ticking(root / "tick.log")
        assert (await client.get("/api/sessions/other/processes")).json() == []


async def test_deleting_the_chat_or_stopping_the_server_ends_its_processes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "work"
    root.mkdir()
    app = web_app(_agent(root), store=ChatStore.in_memory())
    async with app.router.lifespan_context(app), make_client(app) as client:
        await _send(client, "start it")
        assert await _ticking(root / "tick.log")
        assert (await client.delete("/api/sessions/s1")).status_code == 200
        assert not await _ticking(root / "tick.log")
        assert (await client.get("/api/sessions/s1/processes")).json() == []
    other = tmp_path / "other"
    other.mkdir()
    app = web_app(_agent(other), store=ChatStore.in_memory())
    async with app.router.lifespan_context(app), make_client(app) as client:
        await _send(client, "start it")
        assert await _ticking(other / "tick.log")
    started = time.monotonic()
    assert not await _ticking(other / "tick.log")  # the server stopped: so did the process
    assert time.monotonic() - started < 5


async def test_a_settings_change_that_keeps_the_workspace_keeps_the_chats_processes(
    tmp_path: Path,
) -> None:
    # a Settings change rebuilds the served agent with a new, equal Workspace.local: the
    # chat's dev server must not die with the old agent object (0.9.119 compared configs)
    from lovia.web.api_config import ConfigFile

    root = tmp_path / "work"
    root.mkdir()

    def rebuild(doc: dict[str, Any]) -> Agent:
        model = ScriptedProvider([text("after the change")])
        return Agent(name="bot", model=model, workspace=Workspace.local(str(root), mode="trusted"))

    config = ConfigFile(path=tmp_path / "config.json", agent_name="bot", rebuild=rebuild)
    app = web_app(_agent(root), store=ChatStore.in_memory(), config_runtime=config)
    async with app.router.lifespan_context(app), make_client(app) as client:
        await _send(client, "start it")
        assert await _ticking(root / "tick.log")
        changed = await client.put("/api/config/search", json={"backend": "off"})
        assert changed.status_code == 200, changed.text
        await _send(client, "again")
        assert await _ticking(root / "tick.log")
        assert [p["status"] for p in (await client.get("/api/sessions/s1/processes")).json()] == [
            "running"
        ]


async def test_a_workspace_that_cannot_open_fails_the_run_not_the_request(
    tmp_path: Path,
) -> None:
    # binding the chat's session opens it before the run starts: a workspace that could not
    # open (a backend that is down) failed the request as an internal error and the message
    # vanished, where the run used to open it itself and fail, the message kept with the error
    from dataclasses import dataclass

    from lovia.workspace import LocalWorkspace, WorkspaceError

    @dataclass(frozen=True)
    class Down(LocalWorkspace):
        async def open(self) -> Any:
            raise WorkspaceError("the sandbox backend is down")

    root = tmp_path / "work"
    root.mkdir()
    agent = Agent(name="bot", model=ScriptedProvider([text("never")]), workspace=Down(str(root)))
    app = web_app(agent, store=ChatStore.in_memory())
    async with app.router.lifespan_context(app), make_client(app) as client:
        sent = await client.post("/api/chat", json={"message": "hello", "session_id": "s1"})
        assert sent.json()["detail"]["code"] == "run_failed", sent.text  # was 'internal'
        shown = str((await client.get("/api/sessions/s1")).json())
        assert "hello" in shown and "the sandbox backend is down" in shown, shown
        assert (await client.get("/api/sessions/s1/processes")).json() == []


async def test_deleting_a_chat_ends_the_processes_of_the_chats_it_owns(tmp_path: Path) -> None:
    # a chat's subagent task chats go with it; a message sent to one ran there and bound its
    # own session, whose process outlived the deletion until the server stopped
    root = tmp_path / "work"
    root.mkdir()
    model = ScriptedProvider(
        [
            text("hello"),
            call("shell", {"command": TICK, "background": True}, call_id="c1"),
            text("started"),
        ]
    )
    agent = Agent(name="bot", model=model, workspace=Workspace.local(str(root), mode="trusted"))
    store = ChatStore.in_memory()
    app = web_app(agent, store=store)
    async with app.router.lifespan_context(app), make_client(app) as client:
        await _send(client, "hi")
        await store.upsert("s1.task.1", agent="bot", title="a task", parent_id="s1")
        sent = await client.post("/api/chat", json={"message": "go", "session_id": "s1.task.1"})
        assert sent.status_code == 200, sent.text
        assert await _ticking(root / "tick.log")
        assert (await client.delete("/api/sessions/s1")).status_code == 200
        assert await store.get("s1.task.1") is None
        assert not await _ticking(root / "tick.log")
