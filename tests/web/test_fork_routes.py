"""Issue 33 over HTTP, against a real server on 127.0.0.1 (uvicorn in a thread, chats in a
SQLite file): ``POST /api/runs/{run_id}/fork`` forks a stored run at a step into a new chat
that ``POST /api/chat/reconnect`` resumes from there (the scripted model counts the calls,
the tool counts its runs); ``POST /api/sessions/{id}/fork`` copies a chat into a chosen id.
Two forks into one new id at once: one wins, the other is ``409 fork_exists``, and the
winner's fork is whole."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.testing import ScriptedProvider, call, text

from .conftest import decode
from .test_browser import Server

RAN: list[str] = []


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    RAN.append(city)
    return f"sunny in {city}"


def _in_thread(coro: Any) -> Any:
    """Run ``coro`` on a loop of its own (the server's loop is busy in its thread)."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(asyncio.run(coro)))
    worker.start()
    worker.join()
    return out[0]


async def _fill(db: Path) -> None:
    """Chat ``c1``: a first run ``r0`` ("hello"), then run ``r1`` whose first model turn
    calls ``lookup`` and whose second answers; both kept in the checkpointer."""
    session, cp = SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)
    try:
        first = Agent(name="bot", model=ScriptedProvider([text("hi there")]), tools=[lookup])
        await Runner.run(
            first, "hello", session=session, session_id="c1", checkpoint=CheckpointOptions(cp, "r0")
        )
        model = ScriptedProvider(
            [call("lookup", {"city": "Oslo"}, call_id="k1"), text("Oslo is sunny")]
        )
        agent = Agent(name="bot", model=model, tools=[lookup])
        await Runner.run(
            agent,
            "weather in Oslo?",
            session=session,
            session_id="c1",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
    finally:
        await session.close()
        await cp.close()


class Served:
    def __init__(self, server: Server, model: ScriptedProvider) -> None:
        self.server, self.model = server, model
        self.url = server.url.rstrip("/")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    db = tmp_path / "chats.db"
    _in_thread(_fill(db))
    RAN.clear()
    model = ScriptedProvider([text("after the fork: still sunny")])
    agent = Agent(name="bot", model=model, tools=[lookup])
    with Server(db, agents=agent) as running:
        yield Served(running, model)


def _texts(detail: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m["content"]) for m in detail["entries"]]


def test_a_run_forked_at_a_step_resumes_there_in_a_new_chat(served: Served) -> None:
    base = served.url
    before = httpx.get(f"{base}/api/sessions/c1").json()
    made = httpx.post(
        f"{base}/api/runs/r1/fork",
        json={"at_turn": 1, "new_run_id": "r1-fork", "session_id": "c1-fork"},
        timeout=30,
    )
    assert made.status_code == 200, made.text
    body = made.json()
    assert (body["run_id"], body["session_id"], body["status"]) == (
        "r1-fork",
        "c1-fork",
        "interrupted",
    )
    assert body["forked_from"]["run_id"] == "r1" and body["forked_from"]["session_id"] == "c1"
    # the new chat is listed, linked to its source, with the run waiting to resume
    listed = {c["id"]: c for c in httpx.get(f"{base}/api/sessions").json()}
    assert listed["c1-fork"]["pending"]["run_id"] == "r1-fork"
    # resuming runs no tool again and asks the model once: for turn 2 only
    resumed = httpx.post(f"{base}/api/chat/reconnect?session_id=c1-fork", timeout=30)
    events = decode(resumed.text)
    assert events[-1]["event"] == "done", events[-1]
    assert RAN == [] and len(served.model.calls) == 1
    asked = served.model.calls[0]  # the model saw the history and the kept tool result
    assert [(m.role, m.content) for m in asked][-3:-1] == [
        ("user", "weather in Oslo?"),
        ("assistant", None),
    ]
    assert (asked[-1].role, asked[-1].content) == ("tool", "sunny in Oslo")
    fork = httpx.get(f"{base}/api/sessions/c1-fork").json()
    assert _texts(fork)[:2] == [("user", "hello"), ("assistant", "hi there")]
    assert ("tool", "sunny in Oslo") in _texts(fork)
    assert _texts(fork)[-1] == ("assistant", "after the fork: still sunny")
    assert (fork["origin"]["kind"], fork["origin"]["session_id"]) == ("fork", "c1")
    # the source chat is as it was
    assert httpx.get(f"{base}/api/sessions/c1").json()["entries"] == before["entries"]


def test_a_bad_fork_point_or_run_is_refused_with_nothing_written(served: Served) -> None:
    base = served.url
    too_far = httpx.post(f"{base}/api/runs/r1/fork", json={"at_turn": 9, "session_id": "x1"})
    assert too_far.status_code == 422
    assert too_far.json()["detail"]["code"] == "invalid_fork_point"
    unknown = httpx.post(f"{base}/api/runs/nope/fork", json={"at_turn": 0, "session_id": "x2"})
    assert (unknown.status_code, unknown.json()["detail"]["code"]) == (404, "run_not_found")
    no_call = httpx.post(
        f"{base}/api/runs/r1/fork",
        json={"at_turn": 1, "session_id": "x3", "tool_results": {"k9": "rain"}},
    )
    assert no_call.status_code == 422
    taken = httpx.post(f"{base}/api/runs/r1/fork", json={"at_turn": 1, "session_id": "c1"})
    assert (taken.status_code, taken.json()["detail"]["code"]) == (409, "fork_exists")
    ids = {c["id"] for c in httpx.get(f"{base}/api/sessions").json()}
    assert ids == {"c1"}
    for chat in ("x1", "x2", "x3"):
        assert httpx.get(f"{base}/api/sessions/{chat}").json()["entries"] == []


def test_a_fork_with_an_edited_tool_result_goes_on_from_the_edit(served: Served) -> None:
    base = served.url
    made = httpx.post(
        f"{base}/api/runs/r1/fork",
        json={"at_turn": 1, "session_id": "edited", "tool_results": {"k1": "snowing in Oslo"}},
    )
    assert made.status_code == 200, made.text
    httpx.post(f"{base}/api/chat/reconnect?session_id=edited", timeout=30)
    fork = httpx.get(f"{base}/api/sessions/edited").json()
    assert ("tool", "snowing in Oslo") in _texts(fork)
    assert ("tool", "sunny in Oslo") not in _texts(fork)
    assert RAN == []


async def _race(base: str, path: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        return list(await asyncio.gather(*(client.post(path, json=b) for b in bodies)))


def test_two_chat_forks_into_one_new_id_one_wins_the_other_is_409(served: Served) -> None:
    base = served.url
    source = httpx.get(f"{base}/api/sessions/c1").json()
    for attempt in range(5):
        new = f"same-{attempt}"
        replies = _in_thread(_race(base, "/api/sessions/c1/fork", [{"new_id": new}] * 2))
        statuses = sorted(r.status_code for r in replies)
        assert statuses == [200, 409], [r.text for r in replies]
        lost = next(r for r in replies if r.status_code == 409)
        assert lost.json()["detail"]["code"] == "fork_exists"
        won = next(r for r in replies if r.status_code == 200)
        assert won.json() == {"session_id": new}
        fork = httpx.get(f"{base}/api/sessions/{new}").json()
        assert _texts(fork) == _texts(source)  # one whole copy, not two, not half
    segments = served.server.segments("same-0")
    assert [s.run_id for s in segments] == ["r0", "r1"]


def test_two_run_forks_into_one_new_run_id_one_wins_the_other_is_409(served: Served) -> None:
    base = served.url
    bodies = [
        {"at_turn": 1, "new_run_id": "twin", "session_id": "twin-a"},
        {"at_turn": 1, "new_run_id": "twin", "session_id": "twin-b"},
    ]
    replies = _in_thread(_race(base, "/api/runs/r1/fork", bodies))
    assert sorted(r.status_code for r in replies) == [200, 409], [r.text for r in replies]
    won = next(r for r in replies if r.status_code == 200).json()
    lost = next(r for r in replies if r.status_code == 409).json()
    assert lost["detail"]["code"] == "fork_exists"
    loser = ({"twin-a", "twin-b"} - {won["session_id"]}).pop()
    # the loser left no chat, no history; the winner's run resumes whole
    assert httpx.get(f"{base}/api/sessions/{loser}").json()["entries"] == []
    assert loser not in {c["id"] for c in httpx.get(f"{base}/api/sessions").json()}
    httpx.post(f"{base}/api/chat/reconnect?session_id={won['session_id']}", timeout=30)
    fork = httpx.get(f"{base}/api/sessions/{won['session_id']}").json()
    assert [t for t in _texts(fork) if t[0] == "user"] == [
        ("user", "hello"),
        ("user", "weather in Oslo?"),
    ]
    assert len(served.model.calls) == 1 and RAN == []
