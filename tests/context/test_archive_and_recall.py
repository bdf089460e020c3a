"""Result stores and ``recall_tool_result``: archived outputs survive trims (S8, S9)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    FileResultStore,
    InMemoryResultStore,
    InMemorySession,
    ResultStore,
    Runner,
    Todo,
    UserError,
    tool,
)
from lovia.context import Compaction, content_digest
from lovia.events import ToolCallCompleted
from lovia.testing import call, text

from .support import ScriptedProvider, fetch_tool, page

BIG = 6_000


async def recall_output(agent: Agent, model: ScriptedProvider, ref: str, **kwargs: Any) -> str:
    """Run one turn in which the model calls recall_tool_result(ref); return the tool output."""
    model.extend([call("recall_tool_result", {"ref": ref}, call_id="recall"), text("ok")])
    handle = Runner.stream(agent, "show me that output again", **kwargs)
    completed = [e async for e in handle if isinstance(e, ToolCallCompleted)]
    await handle.result()
    (done,) = completed
    assert not done.is_error
    return done.output


async def session_with_a_big_result(
    policy: Compaction, runs: list[int] | None = None
) -> tuple[Agent, ScriptedProvider, InMemorySession]:
    model = ScriptedProvider([call("fetch", {"n": 7}, call_id="c7"), text("got it"), text("hi")])
    agent = Agent("a", model=model, tools=[fetch_tool(BIG, runs)], context_policy=policy)
    session = InMemorySession()
    await Runner.run(agent, "fetch page 7", session=session, session_id="s")
    await Runner.run(agent, "hello again", session=session, session_id="s")
    return agent, model, session


async def test_trim_then_recall_returns_the_full_original_from_a_file_store(
    tmp_path: Path,
) -> None:
    """S9: with a FileResultStore every result is archived when first seen, so after
    trim_tool_results the recall tool still returns the whole output, by the digest its
    marker names or by call id."""
    store = FileResultStore(tmp_path / "results")
    runs: list[int] = []
    agent, model, session = await session_with_a_big_result(Compaction(store=store), runs)
    assert await session.trim_tool_results("s", keep_chars=100, keep_runs=1) == 1
    trimmed = [e.output for e in await session.load("s") if e.type == "tool_result"]
    digest = content_digest(page(7, BIG))
    assert len(trimmed[0]) < 300 and f'recall_tool_result("{digest}")' in trimmed[0]

    by_digest = await recall_output(agent, model, digest, session=session, session_id="s")
    assert by_digest == page(7, BIG)
    by_call = await recall_output(agent, model, "c7", session=session, session_id="s")
    assert by_call == page(7, BIG)
    assert runs == [7]  # recall never runs the original tool again

    # The archive is on disk: a new store on the same directory (a new process) has it.
    again = FileResultStore(tmp_path / "results")
    assert await again.get(content_digest(page(7, BIG))) == page(7, BIG)


async def test_without_an_archive_a_trimmed_output_is_gone() -> None:
    """S9, the documented loss: no store, so recall can only return what the session kept,
    and says the rest is gone."""
    policy = Compaction(context_window=100_000, reserve_output_tokens=1_000)  # recall, no store
    agent, model, session = await session_with_a_big_result(policy)
    await session.trim_tool_results("s", keep_chars=100, keep_runs=1)
    output = await recall_output(agent, model, "c7", session=session, session_id="s")
    assert output.startswith(page(7, BIG)[:100])
    assert page(7, BIG) not in output
    assert "no archive" in output


async def test_recall_without_a_trim_reads_the_transcript() -> None:
    """Store first, then the transcript: with no store an untrimmed output is still found."""
    policy = Compaction(context_window=100_000, reserve_output_tokens=1_000)
    agent, model, session = await session_with_a_big_result(policy)
    output = await recall_output(agent, model, "c7", session=session, session_id="s")
    assert output == page(7, BIG)


async def test_an_unknown_ref_gets_a_plain_not_found_result() -> None:
    """An unknown ref is not an error: the model reads "not found" and goes on."""
    policy = Compaction(store=InMemoryResultStore())
    agent, model, session = await session_with_a_big_result(policy)
    output = await recall_output(agent, model, "no-such-call", session=session, session_id="s")
    assert "No tool result found" in output


async def test_recall_of_a_reused_call_id_prefers_the_output_the_transcript_shows(
    tmp_path: Path,
) -> None:
    """Call ids repeat across turns (call_<name>); the archive picks the matching output."""
    store = FileResultStore(tmp_path)
    model = ScriptedProvider(
        [call("fetch", {"n": 1}), text("one"), call("fetch", {"n": 2}), text("two")]
    )
    agent = Agent("a", model=model, tools=[fetch_tool(BIG)], context_policy=Compaction(store=store))
    session = InMemorySession()
    await Runner.run(agent, "page 1", session=session, session_id="s")
    await Runner.run(agent, "page 2", session=session, session_id="s")
    output = await recall_output(agent, model, "call_fetch", session=session, session_id="s")
    assert output == page(2, BIG)


async def test_file_store_keeps_any_key_inside_its_directory(tmp_path: Path) -> None:
    """Keys are any text (as in 0.9.119): traversal-looking keys land inside the store, each
    in its own file, and read back; a key that is not text is refused with a hint."""
    store = FileResultStore(tmp_path / "store")
    keys = ("../escape", "..", "a/b", "a:b", "/etc/passwd", "x\\y", "", "_", "a.txt", "k" * 129)
    for n, key in enumerate(keys):
        await store.put(key, f"secret {n}")
    for n, key in enumerate(keys):
        assert await store.get(key) == f"secret {n}"
    assert sorted(os.listdir(tmp_path)) == ["store"]
    assert len(os.listdir(tmp_path / "store")) == len(keys)
    with pytest.raises(UserError) as info:
        await store.put(7, "x")  # type: ignore[arg-type]
    assert info.value.hint


async def test_file_store_round_trips_text_exactly_and_leaves_no_temp_files(tmp_path: Path) -> None:
    """One file per key, written through a temp file and os.replace."""
    store = FileResultStore(tmp_path)
    content = "混合 text ✓ \n\r\x00 end"
    key = content_digest(content)
    await store.put(key, content)
    await store.put(key, content)  # idempotent
    assert await store.get(key) == content
    assert await store.get("0" * 24) is None
    assert os.listdir(tmp_path) == [f"{key}.txt"]


async def test_in_memory_store_forgets_the_least_recently_used() -> None:
    store = InMemoryResultStore(max_entries=2)
    await store.put("a", "1")
    await store.put("b", "2")
    assert await store.get("a") == "1"  # "a" is now the most recent
    await store.put("c", "3")
    assert (await store.get("a"), await store.get("b"), await store.get("c")) == ("1", None, "3")
    with pytest.raises(UserError):
        InMemoryResultStore(max_entries=0)


def test_both_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    assert isinstance(FileResultStore(tmp_path), ResultStore)
    assert isinstance(InMemoryResultStore(), ResultStore)


class SyncStore:
    """A store with plain methods (the policy calls them off the event loop)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}
        self.threads: set[str] = set()

    def put(self, key: str, content: str) -> None:
        self.threads.add(threading.current_thread().name)
        self.items[key] = content

    def get(self, key: str) -> str | None:
        return self.items.get(key)


class AsyncStore:
    """A user's store written for lovia 0.9.119: two coroutines."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    async def put(self, key: str, content: str) -> None:
        self.items[key] = content

    async def get(self, key: str) -> str | None:
        return self.items.get(key)


@pytest.mark.parametrize("kind", [SyncStore, AsyncStore])
async def test_a_users_store_may_be_sync_or_async_and_archives_and_recalls(kind: Any) -> None:
    store = kind()
    policy = Compaction(store=store)
    agent, model, session = await session_with_a_big_result(policy)
    assert page(7, BIG) in store.items.values()
    await session.trim_tool_results("s", keep_chars=100, keep_runs=1)
    assert await recall_output(agent, model, "c7", session=session, session_id="s") == page(7, BIG)
    if isinstance(store, SyncStore):
        assert threading.main_thread().name not in store.threads


async def test_sqlite_session_trim_then_recall_across_processes(tmp_path: Path) -> None:
    """S7 + S9 on real files: the session and the archive both outlive the process, so a new
    agent on the same files recalls the full output after a trim; meta carries the state."""
    from lovia import SQLiteSession

    db, archive = tmp_path / "chat.db", tmp_path / "archive"
    async with SQLiteSession(db) as session:
        policy = Compaction(
            context_window=8_000, reserve_output_tokens=1_000, store=FileResultStore(archive)
        )
        model = ScriptedProvider([call("fetch", {"n": 3}, call_id="c3"), text("ok"), text("hi")])
        agent = Agent("a", model=model, tools=[fetch_tool(30_000)], context_policy=policy)
        await Runner.run(agent, "fetch page 3", session=session, session_id="s")
        await Runner.run(agent, "hello", session=session, session_id="s")
        segments = await session.segments("s")
        assert (segments[-1].meta or {})["context_state"]["offloaded"]
        assert await session.trim_tool_results("s", keep_chars=50, keep_runs=1) == 1

    async with SQLiteSession(db) as session:
        model = ScriptedProvider()
        agent = Agent(
            "a",
            model=model,
            tools=[fetch_tool(30_000)],
            context_policy=Compaction(store=FileResultStore(archive)),
        )
        output = await recall_output(agent, model, "c3", session=session, session_id="s")
    assert output == page(3, 30_000)


def _names(agent: Agent) -> list[str]:
    return [t.name for t in agent.all_tools()]


def test_recall_comes_after_an_agents_tools_and_its_own_tool_of_that_name_wins() -> None:
    @tool
    def lookup(q: str) -> str:
        """Look up."""
        return q

    @tool(name="recall_tool_result")
    def my_recall(ref: str) -> str:
        """The user's own recall."""
        return "mine"

    assert _names(Agent("a", tools=[lookup])) == ["lookup", "recall_tool_result"]
    assert _names(Agent("a", tools=[my_recall])) == ["recall_tool_result"]
    assert Agent("a", tools=[my_recall]).all_tools()[0] is my_recall
    assert _names(Agent("a")) == []  # a tool-less agent's requests stay tool-less
    assert _names(Agent("a", context_policy=Compaction(store=InMemoryResultStore()))) == [
        "recall_tool_result"
    ]


async def test_an_agent_whose_tools_all_come_from_plugins_is_offered_recall_too() -> None:
    """A workspace, MCP or toolkit agent has tools (the plugins'), so outputs for a marker to
    stand for: 0.9.119 offers it ``recall_tool_result`` as it does any agent with tools, and
    its examples 20 to 25 and 30 send it (found running them side by side)."""
    model = ScriptedProvider(
        [
            call("todo_write", {"todos": [{"content": "Plan the work"}]}, call_id="t1"),
            call("recall_tool_result", {"ref": "t1"}, call_id="r1"),
            text("done"),
        ]
    )
    agent = Agent("planner", model=model, plugins=[Todo()])
    handle = Runner.stream(agent, "plan it")
    completed = [e async for e in handle if isinstance(e, ToolCallCompleted)]
    await handle.result()
    offered = [[spec["name"] for spec in specs] for specs in model.tools]
    assert offered[0] == ["todo_write", "recall_tool_result"]  # the policy's last, as before
    first, recalled = completed
    assert not recalled.is_error, recalled.output
    assert recalled.output == first.output
