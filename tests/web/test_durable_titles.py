"""Titles and follow-ups are checkpointed runs of no chat (issue 30): a server killed during
the title call names the chat when it starts again, a finished call asked again replays
without the model, and neither kind of run shows as a chat or in the run history."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from lovia import Agent, SQLiteCheckpointer
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatStore, create_app
from lovia.web.titles import generate_title

from .conftest import make_client

ROOT = Path(__file__).resolve().parents[2]
LOVIA = Path(sys.executable).with_name("lovia")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _server(db: Path, env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = _free_port()
    command = [str(LOVIA), "web", "--app", "tests.web.apps:named", "--db", str(db)]
    proc = subprocess.Popen(
        [*command, "--port", str(port), "--lease-ttl", "1"],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("lovia web did not start")
            time.sleep(0.1)
        yield proc, base
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _wait_for(check: Any, what: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never saw {what}")


def test_a_title_call_killed_in_flight_names_the_chat_after_a_restart(tmp_path: Path) -> None:
    db, calls = tmp_path / "lovia.db", tmp_path / "title-calls"
    blocked = {"LOVIA_TEST_TITLE_CALLS": str(calls), "LOVIA_TEST_BLOCK_TITLES": "1"}
    with _server(db, blocked) as (proc, base):
        body = {"message": "name me please", "session_id": "k"}
        assert httpx.post(f"{base}/api/chat", json=body, timeout=30).status_code == 200
        _wait_for(lambda: calls.exists() and calls.read_text(), "the title call")
        proc.send_signal(signal.SIGKILL)  # the title call is in flight: nothing is saved
        proc.wait(timeout=10)
    assert calls.read_text().count("title") == 1
    with _server(db, {"LOVIA_TEST_TITLE_CALLS": str(calls)}) as (_, base):

        def title() -> str | None:
            [chat] = httpx.get(f"{base}/api/sessions").json()
            return chat["title"] if chat["title"] != "name me please" else None

        assert _wait_for(title, "the chat named") == "Kill Test Title"  # with no new message
        assert calls.read_text().count("title") == 2
        listed = httpx.get(f"{base}/api/sessions").json()
        assert [c["id"] for c in listed] == ["k"]
        assert httpx.get(f"{base}/api/runs").json() == []
        history = httpx.get(f"{base}/api/runs/history").json()
        assert [r["session_id"] for r in history] == ["k"]
    with _server(db, {"LOVIA_TEST_TITLE_CALLS": str(calls)}) as (_, base):
        assert httpx.get(f"{base}/api/sessions").json()[0]["title"] == "Kill Test Title"
    assert calls.read_text().count("title") == 2  # the finished run is not asked again


async def test_a_finished_title_run_asked_again_replays_without_the_model(
    tmp_path: Path,
) -> None:
    checkpointer = SQLiteCheckpointer(tmp_path / "cp.db")
    model = ScriptedProvider([text("Trip Planning")])  # one answer: a second call fails
    first = await generate_title(model, "plan a trip", checkpointer=checkpointer, run_id="t:1")
    again = await generate_title(model, "plan a trip", checkpointer=checkpointer, run_id="t:1")
    assert first == again == "Trip Planning"
    assert len(model.calls) == 1
    await checkpointer.close()


class _ByPrompt:
    """Answers by what is asked (a chat, its title, its follow-ups), noting each ask."""

    name = model = "by-prompt"
    supports_json_schema = False

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        users = [e for e in entries if getattr(e, "role", None) == "user"]
        asked = users[-1].text if users else ""
        kind, answer = "chat", "the answer"
        if asked.startswith("Write a short title"):
            kind, answer = "title", "Chat Named"
        elif asked.startswith("USER:"):
            kind, answer = "followups", "What next?\nWhy so?"
        self.asked.append(kind)
        async for delta in ScriptedProvider([text(answer)]).stream(entries, **kwargs):
            yield delta


async def test_title_and_followup_runs_are_neither_chats_nor_runs(tmp_path: Path) -> None:
    model = _ByPrompt()
    store = ChatStore.sqlite(tmp_path / "w.db")
    app = create_app({"a": Agent("a", model=model)}, store=store, followups=True)
    async with make_client(app) as client:
        body = {"message": "hello there", "session_id": "c"}
        assert (await client.post("/api/chat", json=body)).status_code == 200
        for _ in range(300):
            if (await client.get("/api/sessions")).json()[0]["title"] == "Chat Named":
                break
            await asyncio.sleep(0.02)
        path = "/api/sessions/c/followups"
        asked = [(await client.post(path)).json()["followups"] for _ in range(2)]
        assert asked == [["What next?", "Why so?"]] * 2  # the second one replayed
        assert sorted(model.asked) == ["chat", "followups", "title"]
        title_run = await store.checkpointer.load("title:c")
        assert title_run is not None and title_run.status == "completed"
        listed = (await client.get("/api/sessions")).json()
        assert [(c["id"], c["title"]) for c in listed] == [("c", "Chat Named")]
        assert (await client.get("/api/runs")).json() == []
        history = (await client.get("/api/runs/history")).json()
        assert [r["session_id"] for r in history] == ["c"]
        body = {"message": "and more", "session_id": "c"}
        assert (await client.post("/api/chat", json=body)).status_code == 200
        assert (await client.post(path)).json()["followups"] == ["What next?", "Why so?"]
        assert model.asked.count("followups") == 2  # a new answer, new suggestions
        runs = [r["run_id"] for r in (await client.get("/api/runs/history")).json()]
        assert await store.checkpointer.load(f"followups:c:{runs[0]}") is not None
        assert await store.checkpointer.load(f"followups:c:{runs[1]}") is None  # replaced
        assert [c["id"] for c in (await client.get("/api/sessions")).json()] == ["c"]
    await store.close()


async def test_deleting_a_chat_deletes_its_title_and_follow_up_runs(tmp_path: Path) -> None:
    """The title and follow-up calls hold the chat's words (its first message, its last
    exchange): a deleted chat leaves none of them behind."""
    model = _ByPrompt()
    store = ChatStore.sqlite(tmp_path / "w.db")
    app = create_app({"a": Agent("a", model=model)}, store=store, followups=True)
    async with make_client(app) as client:
        body = {"message": "my secret plan", "session_id": "c"}
        assert (await client.post("/api/chat", json=body)).status_code == 200
        for _ in range(300):
            if (await client.get("/api/sessions")).json()[0]["title"] == "Chat Named":
                break
            await asyncio.sleep(0.02)
        assert (await client.post("/api/sessions/c/followups")).json()["followups"]
        runs = [r["run_id"] for r in (await client.get("/api/runs/history")).json()]
        side = ["title:c", f"followups:c:{runs[0]}"]
        assert all([await store.checkpointer.load(r) is not None for r in side])
        assert (await client.delete("/api/sessions/c")).status_code == 200
        assert [await store.checkpointer.load(r) for r in side] == [None, None]
    await store.close()
