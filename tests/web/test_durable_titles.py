"""Titles and follow-ups are checkpointed runs of no chat (issue 30): a server killed during
the title call names the chat when it starts again, a finished call asked again replays
without the model, and neither kind of run shows as a chat or in the run history."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import Agent, AssistantTextEntry, InputEntry, RunHead, SQLiteCheckpointer
from lovia.stores import open_stores
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatStore, create_app
from lovia.web.titles import generate_title

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from ..web_server import serving
from .conftest import chat_path, make_client

LOVIA = Path(sys.executable).with_name("lovia")
LONG_ID = "long-chat-" * 51 + "id"  # 512 characters: the longest, no room for a prefix


def _server(db: Path, env: dict[str, str]) -> AbstractContextManager[tuple[Any, str]]:
    command = [str(LOVIA), "web", "--app", "tests.web.apps:named", "--db", str(db)]
    return serving([*command, "--lease-ttl", "1"], env={**os.environ, **env}, quiet=True)


def _wait_for(check: Any, what: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never saw {what}")


@pytest.mark.parametrize("chat", ["k", LONG_ID], ids=["short-id", "512-character-id"])
def test_a_title_call_killed_in_flight_names_the_chat_after_a_restart(
    tmp_path: Path, chat: str
) -> None:
    db, calls = tmp_path / "lovia.db", tmp_path / "title-calls"
    blocked = {"LOVIA_TEST_TITLE_CALLS": str(calls), "LOVIA_TEST_BLOCK_TITLES": "1"}
    with _server(db, blocked) as (proc, base):
        body = {"message": "name me please", "session_id": chat}
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
        assert [c["id"] for c in listed] == [chat]
        assert httpx.get(f"{base}/api/runs").json() == []
        history = httpx.get(f"{base}/api/runs/history").json()
        assert [r["session_id"] for r in history] == [chat]
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


async def _named(client: httpx.AsyncClient) -> None:
    """Wait until the one chat has the title the model gave."""
    for _ in range(300):
        if (await client.get("/api/sessions")).json()[0]["title"] == "Chat Named":
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the chat was never named")


async def test_title_and_followup_runs_are_neither_chats_nor_runs(tmp_path: Path) -> None:
    model = _ByPrompt()
    store = ChatStore.sqlite(tmp_path / "w.db")
    app = create_app({"a": Agent("a", model=model)}, store=store, followups=True)
    async with make_client(app) as client:
        body = {"message": "hello there", "session_id": "c"}
        assert (await client.post("/api/chat", json=body)).status_code == 200
        await _named(client)
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


@pytest.fixture(params=["sqlite", "postgres"])
async def chat_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ChatStore]:
    """A chat store on SQLite, or (the same test again) on PostgreSQL."""
    if request.param == "sqlite":
        store = ChatStore.sqlite(tmp_path / "w.db")
        yield store
        await store.close()
        return
    dsn, prefix = postgres_dsn(), fresh_prefix()
    session, checkpointer = open_stores(dsn, table_prefix=prefix)
    store = ChatStore(session, checkpointer=checkpointer, meta_path=dsn)
    try:
        yield store
    finally:
        await store.close()
        drop_prefix(dsn, prefix)


async def _runs_of_no_chat(store: ChatStore) -> list[str]:
    """The ids of the runs of no chat the store keeps: the chats' titles and follow-ups."""
    return [r.run_id for r in await store.checkpointer.list_runs() if not r.session_id]


@pytest.mark.parametrize("chat", ["c", LONG_ID], ids=["short-id", "512-character-id"])
@pytest.mark.parametrize("route", ["one", "all"])
async def test_deleting_a_chat_deletes_its_title_and_follow_up_runs(
    chat_store: ChatStore, chat: str, route: str
) -> None:
    """The title and follow-up calls hold the chat's words (its first message, its last
    exchange): a deleted chat leaves none of them behind, whether it is deleted alone or
    with every chat. A chat whose id leaves no room for a run id's prefix has them too."""
    model = _ByPrompt()
    app = create_app({"a": Agent("a", model=model)}, store=chat_store, followups=True)
    async with make_client(app) as client:
        body = {"message": "my secret plan", "session_id": chat}
        assert (await client.post("/api/chat", json=body)).status_code == 200
        await _named(client)
        assert (await client.post(chat_path(chat, "/followups"))).json()["followups"]
        assert len(await _runs_of_no_chat(chat_store)) == 2  # its title and follow-up runs
        deleted = await client.delete(chat_path(chat) if route == "one" else "/api/sessions")
        assert deleted.status_code == 200, deleted.text
        assert await _runs_of_no_chat(chat_store) == []
        assert (await client.get("/api/sessions")).json() == []


class _Hanging:
    """A model that never answers: a call to it is in flight until cancelled."""

    name = model = "hanging"
    supports_json_schema = False

    def __init__(self) -> None:
        self.called = asyncio.Event()

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        self.called.set()
        await asyncio.sleep(600)
        yield None


async def test_title_and_follow_up_runs_an_earlier_version_left_are_finished_at_start_up(
    tmp_path: Path,
) -> None:
    """Runs stored as the previous version stored them (the chat named only by the run id,
    its input the question alone) are found by the start-up sweep and finished."""
    store = ChatStore.sqlite(tmp_path / "w.db")
    await store.upsert("c", agent="a", title="plan a trip")
    await store.session.append(
        "c",
        [InputEntry(role="user", content="plan a trip"), AssistantTextEntry(content="sure")],
        run_id="r0",
    )
    cp = store.checkpointer
    hanging = _Hanging()
    call = asyncio.ensure_future(
        generate_title(hanging, "plan a trip", checkpointer=cp, run_id="title:c")
    )
    await hanging.called.wait()
    call.cancel()  # the server stopped during the call
    with pytest.raises(asyncio.CancelledError):
        await call
    asked = [InputEntry(role="user", content="USER: plan a trip\n\nASSISTANT: sure")]
    await cp.append("followups:c:r0", asked, RunHead("followups", status="interrupted"))
    model = _ByPrompt()
    app = create_app({"a": Agent("a", model=model)}, store=store, followups=True)
    async with app.router.lifespan_context(app), make_client(app) as client:
        await _named(client)
        for _ in range(300):
            done = await cp.load("followups:c:r0")
            if done is not None and done.status == "completed":
                break
            await asyncio.sleep(0.02)
        path = chat_path("c", "/followups")
        assert (await client.post(path)).json()["followups"] == ["What next?", "Why so?"]
        assert sorted(model.asked) == ["followups", "title"]  # the follow-ups replayed
        assert sorted(await _runs_of_no_chat(store)) == ["followups:c:r0", "title:c"]
        assert (await client.delete(chat_path("c"))).status_code == 200
        assert await _runs_of_no_chat(store) == []
    await store.close()


async def test_start_up_reads_the_unfinished_runs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs a stopped server left, of chats (offered to resume) and of none (titles and
    follow-ups to finish), come from one read of the run heads."""
    reads: list[Any] = []
    real = SQLiteCheckpointer.list_run_heads

    async def counted(self: SQLiteCheckpointer, **kwargs: Any) -> Any:
        reads.append(kwargs)
        return await real(self, **kwargs)

    monkeypatch.setattr(SQLiteCheckpointer, "list_run_heads", counted)
    store = ChatStore.sqlite(tmp_path / "w.db")
    app = create_app({"a": Agent("a", model=_ByPrompt())}, store=store, followups=True)
    async with app.router.lifespan_context(app):
        assert len(reads) == 1  # was 2: the supervisor's, then the sweep's own
    await store.close()
