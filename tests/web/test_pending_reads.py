"""A chat request reads that chat's unfinished runs only (issue 14, item 13): with many
failed runs in other chats, opening, sending to, stopping or resuming one chat never asks
the checkpointer for the other chats' runs; and the chat list reads runs' heads only (a run's
first entry is read once, for its chat's title, when no session has that chat: every such
run's in one ``load_first_entries`` call; the whole run only when that entry has no title, or
from a checkpointer without that method)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import AssistantTextEntry, InputEntry, RunHead, SQLiteCheckpointer, SQLiteSession
from lovia.demo import demo_agent
from lovia.web import ChatStore

from .conftest import events_of, message, sid, web_app


class Recording(SQLiteCheckpointer):
    """The real SQLite checkpointer, noting how each listing was asked and what was loaded."""

    asked: list[dict[str, Any]]
    full: list[dict[str, Any]]
    loaded: list[str]
    firsts: list[list[str]]

    async def list_run_heads(self, **kwargs: Any) -> Any:
        self.asked.append(kwargs)
        return await super().list_run_heads(**kwargs)

    async def list_runs(self, **kwargs: Any) -> Any:
        self.full.append(kwargs)
        return await super().list_runs(**kwargs)

    async def load(self, run_id: str) -> Any:
        self.loaded.append(run_id)
        return await super().load(run_id)

    async def load_first_entries(self, run_ids: Any, *, limit: int = 1) -> Any:
        self.firsts.append(list(run_ids))
        return await super().load_first_entries(run_ids, limit=limit)


def recording(db: Path) -> Recording:
    cp = Recording(db, wal=True)
    cp.asked, cp.full, cp.loaded, cp.firsts = [], [], [], []
    return cp


async def test_a_chat_request_reads_only_that_chats_runs(client_for: Any, tmp_path: Path) -> None:
    db = tmp_path / "lovia.db"
    cp = recording(db)
    session = SQLiteSession(db, wal=True)
    for i in range(40):
        head = RunHead("demo", status="failed", session_id=f"other{i}", error={"type": "X"})
        await cp.append(f"o{i}", [InputEntry(content="x" * 2000)], head)
    head = RunHead("demo", status="failed", session_id="mine", error={"type": "ProviderError"})
    await cp.append("m1", [InputEntry(content="calculate 6 * 7")], head)
    client = client_for(web_app(demo_agent(delay=0), store=ChatStore(session, checkpointer=cp)))

    cp.asked.clear()
    detail = (await client.get("/api/sessions/mine")).json()
    assert detail["pending"]["run_id"] == "m1"
    resumed = events_of(await client.post(f"/api/chat/reconnect{sid('mine')}"))
    assert "42" in resumed[-1]["output"]
    sent = events_of(await client.post("/api/chat/stream", json=message("mine", "hi")))
    assert sent[-1]["event"] == "done"
    stopped = await client.post(f"/api/chat/cancel{sid('mine')}")
    assert stopped.json()["stopped"] is None  # nothing to stop
    assert cp.asked, "the chat's unfinished run is looked up through list_run_heads"
    assert all(kwargs.get("session_id") == "mine" for kwargs in cp.asked), cp.asked
    assert not cp.full, "no request reads every run with its entries"
    assert not [r for r in cp.loaded if r.startswith("o")], "no other chat's run is read"

    # the chat list and the resumable runs still see every chat
    cp.loaded.clear()
    cp.firsts.clear()
    chats = (await client.get("/api/sessions")).json()
    listed = {c["id"]: c for c in chats}
    assert {f"other{i}" for i in range(40)} <= set(listed)
    assert listed["other7"]["title"] == "x" * 79 + "…"  # the run's first message
    assert listed["other7"]["pending"]["status"] == "failed"
    assert cp.loaded == [], "a title is read from the run's first entry, not the whole run"
    assert [sorted(ids) for ids in cp.firsts] == [sorted(f"o{i}" for i in range(40))]
    resumable = (await client.get("/api/runs/resumable")).json()
    assert len(resumable) == 40 and all(r["title"] for r in resumable)
    assert len(cp.firsts) == 1, "each title is read once"

    cp.loaded.clear()
    assert (await client.get("/api/sessions")).json() == chats
    assert len((await client.get("/api/runs/resumable")).json()) == 40
    assert cp.loaded == [], "the chat list reads heads only once titles are known"
    assert len(cp.firsts) == 1
    assert not cp.full
    await session.close()
    await cp.close()


async def test_a_run_that_starts_without_a_user_message_is_read_whole_for_its_title(
    client_for: Any, tmp_path: Path
) -> None:
    db = tmp_path / "lovia.db"
    cp = recording(db)
    session = SQLiteSession(db, wal=True)
    head = RunHead("demo", status="failed", session_id="odd", error={"type": "X"})
    await cp.append("odd-run", [AssistantTextEntry(content="hello first")], head)
    await cp.append("odd-run", [InputEntry(content="the  question\n asked")], head)
    other = RunHead("demo", status="failed", session_id="p", error={"type": "X"})
    await cp.append("plain", [InputEntry(content="plain one")], other)
    client = client_for(web_app(demo_agent(delay=0), store=ChatStore(session, checkpointer=cp)))
    titles = {c["id"]: c["title"] for c in (await client.get("/api/sessions")).json()}
    assert titles == {"odd": "the question asked", "p": "plain one"}
    assert cp.loaded == ["odd-run"], "only the run whose first entry has no title is read whole"
    await session.close()
    await cp.close()


class Plain:
    """A checkpointer with the protocol's methods and ``list_runs`` only, over a real one."""

    def __init__(self, inner: SQLiteCheckpointer) -> None:
        self.inner = inner

    async def append(self, *args: Any) -> None:
        await self.inner.append(*args)

    async def load(self, run_id: str) -> Any:
        return await self.inner.load(run_id)

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)

    async def update_head(self, run_id: str, fn: Any) -> Any:
        return await self.inner.update_head(run_id, fn)

    async def list_runs(self, **kwargs: Any) -> Any:
        return await self.inner.list_runs(**kwargs)


async def test_a_checkpointer_without_first_entries_still_gives_titles(
    client_for: Any, tmp_path: Path
) -> None:
    db = tmp_path / "lovia.db"
    inner = SQLiteCheckpointer(db, wal=True)
    session = SQLiteSession(db, wal=True)
    head = RunHead("demo", status="failed", session_id="c1", error={"type": "X"})
    await inner.append("r1", [InputEntry(content="what is lovia")], head)
    client = client_for(
        web_app(
            demo_agent(delay=0),
            store=ChatStore(session, checkpointer=Plain(inner)),  # type: ignore[arg-type]
        )
    )
    [chat] = (await client.get("/api/sessions")).json()
    assert (chat["id"], chat["title"]) == ("c1", "what is lovia")
    [run] = (await client.get("/api/runs/resumable")).json()
    assert run["title"] == "what is lovia"
    await session.close()
    await inner.close()


async def test_a_run_caught_between_its_transcript_and_its_checkpoints_end_shows_once(
    client_for: Any, tmp_path: Path
) -> None:
    """A run that ends (or is settled) writes its transcript segment, then drops or completes
    its checkpoint; a page opened in between shows its answer once, in the transcript, not a
    second time as the chat's unfinished run (seen as a flaky two-server approval test)."""
    db = tmp_path / "lovia.db"
    cp = SQLiteCheckpointer(db, wal=True)
    session = SQLiteSession(db, wal=True)
    said = [InputEntry(content="pay bob"), AssistantTextEntry(content="paid 5 to bob")]
    head = RunHead("demo", status="interrupted", session_id="mid")
    await cp.append("r1", said, head)
    await session.append("mid", said, run_id="r1", meta={"ended": "completed"})
    client = client_for(web_app(demo_agent(delay=0), store=ChatStore(session, checkpointer=cp)))
    detail = (await client.get("/api/sessions/mid")).json()
    assert detail["pending"] is None, detail["pending"]
    assert [m["content"] for m in detail["entries"]] == ["pay bob", "paid 5 to bob"]
    # while the run's segment is not written yet, it is the chat's unfinished run
    await cp.append(
        "r2", [InputEntry(content="again")], RunHead("demo", status="interrupted", session_id="mid")
    )
    detail = (await client.get("/api/sessions/mid")).json()
    assert detail["pending"]["run_id"] == "r2"
