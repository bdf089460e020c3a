"""Messages say when they were said: `timestamp` on every message of a chat's detail and
`duration` on the answer that ended a run, from the timing each run records in its
segment (0.9.119's http-api.md: "the answer that ends a run carries its duration in seconds,
and timestamps are real where the run recorded its timing")."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import Agent, RunHead, tool
from lovia.errors import UserTypeError
from lovia.session import TIMING_META_KEY
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry
from lovia.web import ChatStore

from .conftest import events_of, sid, web_app


def _timed(start: float, finish: float) -> dict[str, Any]:
    return {TIMING_META_KEY: {"started_at": start, "finished_at": finish}}


def _exchange(question: str, answer: str) -> list[Any]:
    return [InputEntry(role="user", content=question), AssistantTextEntry(content=answer)]


def _bot(client_for: Any, store: ChatStore, *replies: Any, tools: Any = ()) -> Any:
    """A client of a web app over ``store`` whose agent "bot" answers ``replies``."""
    agent = Agent(name="bot", model=ScriptedProvider(list(replies)), tools=list(tools))
    return client_for(web_app(agent, store=store))


async def _entries(client_for: Any, store: ChatStore) -> list[dict[str, Any]]:
    response = await _bot(client_for, store).get("/api/sessions/s")
    assert response.status_code == 200
    return list(response.json()["entries"])


def _stamps(messages: list[dict[str, Any]]) -> list[tuple[str, Any, Any]]:
    return [(m["role"], m["timestamp"], m["duration"]) for m in messages]


@pytest.fixture
async def chat() -> ChatStore:
    """A store in memory with chat "s" of agent "bot", no message yet."""
    store = ChatStore.in_memory()
    await store.upsert("s", agent="bot")
    return store


_LOOKED = [
    InputEntry(role="user", content="go"),
    ToolCallEntry(call_id="c1", name="look", arguments="{}"),
    ToolResultEntry(call_id="c1", output="seen"),
]
"""A run that asked, called a tool and has its result."""


def _assert_streamed_as_recorded(events: list[dict[str, Any]], segment: Any) -> None:
    """The stream ends with ``timing``, then ``done``; the timing is what ``segment`` holds."""
    assert [e["event"] for e in events][-2:] == ["timing", "done"]  # timing precedes done
    recorded = (segment.meta or {})[TIMING_META_KEY]
    assert events[-2]["finished_at"] == recorded["finished_at"]
    assert events[-2]["duration"] == recorded["finished_at"] - recorded["started_at"]


async def test_a_timed_run_spreads_its_messages_from_its_start_to_its_end(
    client_for: Any, chat: ChatStore
) -> None:
    entries = [*_LOOKED, AssistantTextEntry(content="done")]
    await chat.session.append("s", entries, run_id="r1", meta=_timed(100.0, 160.0))
    assert _stamps(await _entries(client_for, chat)) == [
        ("user", 100.0, None),
        ("assistant", 120.0, None),
        ("tool", 140.0, None),
        ("assistant", 160.0, 60.0),
    ]


async def test_a_run_stopped_after_a_tool_result_ends_on_its_last_answer(
    client_for: Any, chat: ChatStore
) -> None:
    await chat.session.append("s", _LOOKED, run_id="r1", meta=_timed(10.0, 40.0))
    assert _stamps(await _entries(client_for, chat)) == [
        ("user", 10.0, None),
        ("assistant", 40.0, 30.0),
        ("tool", 40.0, None),
    ]


async def test_untimed_runs_fall_between_their_neighbours_in_order(
    client_for: Any, chat: ChatStore
) -> None:
    await chat.session.append("s", _exchange("a", "b"), run_id="old")  # no timing kept
    await chat.session.append("s", _exchange("c", "d"), run_id="r1", meta=_timed(100.0, 110.0))
    await chat.session.append("s", _exchange("e", "f"), run_id="r2")
    got = await _entries(client_for, chat)
    stamps = [m["timestamp"] for m in got]
    # the chat was created now, after the timed run's clock: order wins over the bound
    assert stamps == sorted(stamps)
    assert stamps[:2] == [100.0, 100.0] and stamps[2:4] == [100.0, 110.0]
    assert stamps[4] > 110.0 and stamps[5] > stamps[4]
    assert [m["duration"] for m in got] == [None, None, None, 10.0, None, None]


async def test_a_real_run_is_timed_and_survives_a_restart(client_for: Any, tmp_path: Any) -> None:
    @tool
    async def look() -> str:
        """Look."""
        return "seen"

    path = tmp_path / "chats.db"
    client = _bot(client_for, ChatStore.sqlite(path), call("look", {}), text("done"), tools=[look])
    answer = await client.post("/api/chat", json={"message": "go", "session_id": "s"})
    assert answer.status_code == 200, answer.text
    live = (await client.get("/api/sessions/s")).json()["entries"]
    reopened = await _entries(client_for, ChatStore.sqlite(path))
    for got in (live, reopened):
        stamps = [m["timestamp"] for m in got]
        assert all(isinstance(t, float) for t in stamps) and stamps == sorted(stamps)
        assert got[-1]["role"] == "assistant" and got[-1]["content"] == "done"
        duration = got[-1]["duration"]
        assert isinstance(duration, float) and duration >= 0
        assert abs(stamps[-1] - stamps[0] - duration) < 1e-6
        assert [m["duration"] for m in got[:-1]] == [None] * (len(got) - 1)
    assert [m["timestamp"] for m in live] == [m["timestamp"] for m in reopened]


def test_a_chat_store_given_a_path_says_how_to_open_one(tmp_path: Any) -> None:
    with pytest.raises(UserTypeError) as caught:
        ChatStore(tmp_path / "chats.db")  # type: ignore[arg-type]
    assert "ChatStore.sqlite(path)" in (caught.value.hint or "")
    assert not (tmp_path / "chats.db").exists()  # refused: nothing made


_HI = {"message": "hi", "session_id": "s"}


async def test_the_streams_timing_is_what_the_run_recorded(client_for: Any) -> None:
    store = ChatStore.in_memory()
    response = await _bot(client_for, store, text("hello")).post("/api/chat/stream", json=_HI)
    [segment] = await store.session.segments("s")
    _assert_streamed_as_recorded(events_of(response), segment)


async def test_a_run_that_recorded_no_timing_streams_none(client_for: Any, chat: ChatStore) -> None:
    # a run resumed from a checkpoint written before runs were timed (no start recorded)
    head = RunHead("bot", status="interrupted", session_id="s")
    await chat.checkpointer.append("r1", [InputEntry(role="user", content="hi")], head)
    client = _bot(client_for, chat, text("hello"))
    response = await client.post(f"/api/chat/reconnect{sid('s')}")
    names = [e["event"] for e in events_of(response)]
    assert names[-1] == "done" and "timing" not in names
    [segment] = await chat.session.segments("s")
    assert TIMING_META_KEY not in (segment.meta or {})


async def test_the_streams_timing_comes_without_reading_the_chat_back(client_for: Any) -> None:
    # once the run's answer is saved the chat cannot be read: the timing event still comes,
    # carried by the run's end from its save
    store = ChatStore.in_memory()
    real_append, real_segments = store.session.append, store.session.segments
    saved: list[str] = []

    async def append(session_id: str, entries: Any, **kw: Any) -> Any:
        saved.append(session_id)
        return await real_append(session_id, entries, **kw)

    async def segments(session_id: str) -> Any:
        if saved:
            raise RuntimeError("the database went away")
        return await real_segments(session_id)

    store.session.append = append  # type: ignore[method-assign]
    store.session.segments = segments  # type: ignore[method-assign]
    response = await _bot(client_for, store, text("hello")).post("/api/chat/stream", json=_HI)
    [segment] = await real_segments("s")
    _assert_streamed_as_recorded(events_of(response), segment)
