"""The HTTP API through the real ASGI app: chats, streaming, stop, rewind, reconnect."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from lovia import (
    Agent,
    AssistantTextEntry,
    InMemoryCheckpointer,
    InMemorySession,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    drop_dangling_tool_calls,
    tool,
)
from lovia.demo import demo_agent
from lovia.messages import Message
from lovia.testing import ScriptedProvider, batch, text
from lovia.web import create_app

from .conftest import chat_path, detail_of, events_of, message, sid, user_ref


def _stores() -> tuple[InMemorySession, InMemoryCheckpointer]:
    return InMemorySession(), InMemoryCheckpointer()


def _app(agents: Any, **kw: Any) -> Any:
    """The app on in-memory stores (unless given), without background titles."""
    kw.setdefault("titles", False)
    if "session" not in kw and "store" not in kw:
        kw["session"], kw["checkpointer"] = _stores()
    return create_app(agents, **kw)


async def test_info_names_the_agents_and_the_setup_hint_when_none(client_for: Any) -> None:
    ok = await client_for(_app(demo_agent())).get("/api/info")
    assert ok.json()["agents"] == ["demo"] and ok.json()["default_agent"] == "demo"
    assert ok.json()["demo"] is True and ok.json()["setup_hint"] is None
    assert ok.json()["demo_agents"] == ["demo"] and ok.json()["problems"] == []
    agents = (await client_for(_app(demo_agent())).get("/api/agents")).json()
    # 0.9.119's fields, and only those: what this server adds is in /api/info
    assert set(agents[0]) == {
        "name",
        "instructions",
        "tools",
        "workspace",
        "memory",
        "context_window",
        "model",
    }
    bare = await client_for(_app({})).get("/api/info")
    assert bare.json()["configured"] is False
    hint = bare.json()["setup_hint"]
    assert "LOVIA_MODEL" in hint and "OPENAI_API_KEY" in hint and "ANTHROPIC_API_KEY" in hint
    refused = await client_for(_app({})).post("/api/chat/stream", json=message("c1", "hi"))
    assert refused.status_code == 400 and "LOVIA_MODEL" in detail_of(refused.json())["hint"]
    assert detail_of(refused.json())["code"] == "model_unusable"


async def test_a_message_streams_events_and_lands_in_the_chat(client_for: Any) -> None:
    session, cp = _stores()
    client = client_for(_app(demo_agent(delay=0), session=session, checkpointer=cp))
    events = events_of(await client.post("/api/chat/stream", json={"message": "hi"}))
    kinds = [e["event"] for e in events]
    assert kinds[0] == "session" and kinds[-1] == "done"
    chat = events[0]["session_id"]
    assert kinds.count("text_delta") > 3  # the demo streams word by word
    streamed = "".join(e["delta"] for e in events if e["event"] == "text_delta")
    assert streamed == events[-1]["output"]
    [refs] = [e["refs"] for e in events if e["event"] == "refs"]
    detail = (await client.get(chat_path(chat))).json()
    assert [(m["role"], m["content"]) for m in detail["entries"]] == [
        ("user", "hi"),
        ("assistant", streamed),
    ]
    assert detail["entries"][0]["ref"] == refs[0]
    assert detail["title"] == "hi" and detail["live"] is None and detail["pending"] is None
    listed = (await client.get("/api/sessions")).json()
    assert [c["id"] for c in listed] == [chat] and listed[0]["title"] == "hi"
    run_id = refs[0].split(":")[0]
    snap = await cp.load(run_id)
    assert snap is not None and snap.status == "completed"  # every run is checkpointed
    [record] = (await client.get("/api/runs/history")).json()
    assert (record["run_id"], record["status"], record["source"]) == (run_id, "completed", "user")


async def test_tool_calls_stream_with_arguments_and_results(client_for: Any) -> None:
    client = client_for(_app(demo_agent(delay=0)))
    events = events_of(
        await client.post("/api/chat/stream", json=message("calc", "calculate 6 * 7"))
    )
    started = next(e for e in events if e["event"] == "tool_call")
    done = next(e for e in events if e["event"] == "tool_result")
    assert started["name"] == "calculate" and "6 * 7" in started["arguments"]
    assert done["result"] == "42" and done["is_error"] is False and done["id"] == started["id"]


def _gate_agent() -> tuple[Agent, asyncio.Event]:
    """An agent whose ``slow`` tool starts, signals, and then never returns by itself."""
    started = asyncio.Event()

    @tool
    def fast() -> str:
        """Return at once."""
        return "fast done"

    @tool
    async def slow() -> str:
        """Hang until cancelled."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedProvider([batch(("fast", {}), ("slow", {})), text("second answer")])
    return Agent("gate", model=model, tools=[fast, slow]), started


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Poll ``check`` until it holds; fail after 60 s (a loaded machine is slow, never that
    slow)."""
    deadline = asyncio.get_running_loop().time() + 60
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"waited 60 s for {what}"
        await asyncio.sleep(0.01)


async def _fast_result_saved(client: Any, cp: InMemoryCheckpointer, chat: str) -> str:
    """Wait until the gate agent's ``fast`` call has its result in the run's checkpoint (it
    runs on a worker thread, which a busy machine may start late), and return the run id."""
    run_id = (await client.get(chat_path(chat))).json()["live"]["run_id"]

    async def saved() -> bool:
        snap = await cp.load(run_id)
        return snap is not None and any(isinstance(e, ToolResultEntry) for e in snap.entries)

    await _until(saved, "the fast call's result to be saved")
    return str(run_id)


def _answers_begun(app: Any) -> tuple[Any, list[str]]:
    """``app`` wrapped to note the path of each request whose answer has begun: an SSE
    follow begins answering once it found the live run, before its first event."""
    begun: list[str] = []

    async def noted(scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                begun.append(scope["path"])
            await send(message)

        await app(scope, receive, sending)

    return noted, begun


async def test_stop_mid_tool_saves_the_partial_run_without_dangling_calls(
    client_for: Any,
) -> None:
    """S6: stop = cancel, then the partial transcript becomes a completed segment with the
    unanswered call removed, and the checkpoint is deleted."""
    agent, started = _gate_agent()
    session, cp = _stores()
    client = client_for(_app(agent, session=session, checkpointer=cp))
    sending = asyncio.ensure_future(client.post("/api/chat/stream", json=message("c", "go")))
    await started.wait()
    run_id = await _fast_result_saved(client, cp, "c")  # one call answered, one running
    busy = await client.post(chat_path("c", "/rewind"), json={"user_turn": 0})
    assert busy.status_code == 409 and detail_of(busy.json())["code"] == "run_active"
    stop = await client.post(f"/api/chat/cancel{sid('c')}")
    assert stop.status_code == 200
    assert stop.json() == {"ok": True, "stopped": run_id}
    events = events_of(await sending)
    assert events[-1]["event"] == "error" and events[-1]["stopped"] is True
    assert events[-1]["code"] == "cancelled" and events[-1]["type"] == "RunCancelled"
    stored = await session.load("c")
    assert stored == drop_dangling_tool_calls(stored)
    assert [type(e) for e in stored] == [InputEntry, ToolCallEntry, ToolResultEntry]
    assert isinstance(stored[1], ToolCallEntry) and stored[1].name == "fast"
    segments = await session.segments("c")
    assert [s.run_id for s in segments] == [run_id]
    assert await cp.load(run_id) is None
    [record] = (await client.get("/api/runs/history", params={"session_id": "c"})).json()
    assert record["status"] == "cancelled"
    # the chat goes on from the saved partial run
    after = events_of(await client.post("/api/chat/stream", json=message("c", "next")))
    assert after[-1]["event"] == "done" and after[-1]["output"] == "second answer"


async def test_stop_while_streaming_keeps_the_text_seen_so_far(client_for: Any) -> None:
    session, cp = _stores()
    client = client_for(_app(demo_agent(delay=0.01), session=session, checkpointer=cp))
    sending = asyncio.ensure_future(
        client.post("/api/chat/stream", json=message("s", "tell me a story"))
    )
    while True:
        detail = (await client.get(chat_path("s"))).json()
        if (detail.get("live") or {}).get("events", 0) > 6:
            break
        await asyncio.sleep(0.01)
    await client.post(f"/api/chat/cancel{sid('s')}")
    events = events_of(await sending)
    streamed = "".join(e["delta"] for e in events if e["event"] == "text_delta")
    stored = await session.load("s")
    assert isinstance(stored[-1], AssistantTextEntry)
    assert stored[-1].content == streamed and streamed.startswith("Once upon a time")
    assert events[-1]["event"] == "error" and events[-1]["code"] == "cancelled"
    assert await cp.list_runs() == []


async def _two_exchanges(client: Any, chat: str) -> list[str]:
    run_ids = []
    for question in ("calculate 1 + 1", "hello there"):
        events = events_of(await client.post("/api/chat/stream", json=message(chat, question)))
        [refs] = [e["refs"] for e in events if e["event"] == "refs"]
        run_ids.append(refs[0].split(":")[0])
    return run_ids


async def test_rewind_then_a_message_edits_the_chat(client_for: Any) -> None:
    """S10/S11: history cut exactly before the rewound message; rewound runs' checkpoints
    go; the answer to the new text follows."""
    session, cp = _stores()
    client = client_for(_app(demo_agent(delay=0), session=session, checkpointer=cp))
    first, second = await _two_exchanges(client, "e")
    before = await session.load("e")
    detail = (await client.get(chat_path("e"))).json()
    index = next(i for i, e in enumerate(before) if isinstance(e, InputEntry) and i > 0)
    rewound = await client.post(chat_path("e", "/rewind"), json={"ref": user_ref(detail, 1)})
    assert rewound.status_code == 200, rewound.text
    assert rewound.json()["removed"] == len(before) - index
    assert [m["role"] for m in rewound.json()["entries"]][-1] != "user" or index == 0
    events = events_of(await client.post("/api/chat/stream", json=message("e", "calculate 2*5")))
    assert events[-1]["output"] == "The result is **10**."
    after = await session.load("e")
    assert after[:index] == before[:index]
    assert after[index] == InputEntry(role="user", content="calculate 2*5")
    assert await cp.load(second) is None  # the rewound run's checkpoint is gone
    assert await cp.load(first) is not None  # the kept run's is not
    # rewinding to the very first message empties the chat
    assert (await client.post(chat_path("e", "/rewind"), json={"user_turn": 0})).status_code == 200
    assert await session.load("e") == [] and await cp.load(first) is None


async def test_rewind_refuses_a_message_the_chat_does_not_have(client_for: Any) -> None:
    session, cp = _stores()
    client = client_for(_app(demo_agent(delay=0), session=session, checkpointer=cp))
    await _two_exchanges(client, "x")
    before = await session.load("x")
    for body in ({"ref": "nope:0"}, {"user_turn": 99}):
        bad = await client.post(chat_path("x", "/rewind"), json=body)
        assert bad.status_code == 404 and detail_of(bad.json())["code"] == "turn_not_found"
    both = await client.post(chat_path("x", "/rewind"), json={"ref": "a:0", "user_turn": 0})
    assert both.status_code == 422
    assert await session.load("x") == before


async def test_regenerate_is_a_rewind_and_the_same_message_again(client_for: Any) -> None:
    session, cp = _stores()
    answers = ScriptedProvider([text("one"), text("two"), text("two again")])
    client = client_for(_app(Agent("r", model=answers), session=session, checkpointer=cp))
    for q in ("q1", "q2"):
        events_of(await client.post("/api/chat/stream", json=message("r", q)))
    old_run = (await session.segments("r"))[-1].run_id
    detail = (await client.get(chat_path("r"))).json()
    await client.post(chat_path("r", "/rewind"), json={"ref": user_ref(detail)})
    events = events_of(await client.post("/api/chat/stream", json=message("r", "q2")))
    assert events[-1]["output"] == "two again"
    assert [getattr(e, "content", None) for e in await session.load("r")] == [
        "q1",
        "one",
        "q2",
        "two again",
    ]
    assert await cp.load(old_run) is None
    assert answers.calls[-1][-1] == Message(role="user", content="q2")


async def test_a_reconnecting_client_gets_the_snapshot_and_the_run_again(
    client_for: Any,
) -> None:
    agent, started = _gate_agent()
    app, begun = _answers_begun(_app(agent))
    client = client_for(app)
    sending = asyncio.ensure_future(client.post("/api/chat/stream", json=message("f", "go")))
    await started.wait()
    live = (await client.get(chat_path("f"))).json()["live"]
    assert live["input"] == "go" and live["events"] >= 3
    following = asyncio.ensure_future(client.post(f"/api/chat/reconnect{sid('f')}"))
    resumed = asyncio.ensure_future(client.post(f"/api/chat/reconnect{sid('f')}&after=2"))

    async def both_follow() -> bool:  # a follow arriving after the run ended would be a 404
        return begun.count("/api/chat/reconnect") == 2

    await _until(both_follow, "both reconnects to reach the live run")
    await client.post(f"/api/chat/cancel{sid('f')}")
    original = events_of(await sending)
    replayed = events_of(await following)
    assert replayed[0] == {"event": "session", "session_id": "f"}  # as 0.9.119 opens it
    assert replayed[1]["event"] == "snapshot"
    assert [m["content"] for m in replayed[1]["entries"]] == ["go"]
    assert replayed[2:] == original[1:]  # every event of the run, through its end
    tail = events_of(await resumed)
    assert [e["frame_id"] for e in tail[2:]] == [
        e["frame_id"] for e in original[1:] if int(e["frame_id"].split(":")[1]) > 2
    ]
    gone = await client.post(f"/api/chat/reconnect{sid('f')}")
    assert gone.status_code == 404 and detail_of(gone.json())["code"] == "run_not_found"


async def test_delete_removes_the_chat_and_its_checkpoints(client_for: Any) -> None:
    session, cp = _stores()
    client = client_for(_app(demo_agent(delay=0), session=session, checkpointer=cp))
    events = events_of(await client.post("/api/chat/stream", json=message("d", "hi")))
    [refs] = [e["refs"] for e in events if e["event"] == "refs"]
    assert [r.run_id for r in await cp.list_runs()] == [refs[0].split(":")[0]]
    deleted = await client.delete(chat_path("d"))
    assert deleted.json() == {"ok": True}  # 0.9.119's answer, as its clients compare it
    assert await session.load("d") == []
    assert await cp.list_runs() == []
    assert (await client.get(chat_path("d"))).json()["entries"] == []
    assert (await client.get("/api/sessions")).json() == []
    assert (await client.get("/api/runs/history")).json() == []


async def test_stop_without_a_run_changes_nothing(client_for: Any) -> None:
    client = client_for(_app(demo_agent(delay=0)))
    stopped = await client.post(f"/api/chat/cancel{sid('q')}")
    assert stopped.json() == {"ok": True, "stopped": None}


async def test_bad_bodies_and_ids_are_refused(client_for: Any) -> None:
    client = client_for(_app(demo_agent(delay=0), max_body_bytes=2048))
    empty = await client.post("/api/chat/stream", json=message("a", ""))
    assert empty.status_code == 422
    extra = await client.post("/api/chat/stream", json=message("a", "x", evil=1))
    assert extra.status_code == 422
    negative = await client.post(chat_path("a", "/rewind"), json={"user_turn": -1})
    assert negative.status_code == 422
    bad_id = await client.get("/api/sessions/..%2Fetc")
    assert bad_id.status_code == 400 and "'~'" in detail_of(bad_id.json())["hint"]
    huge = await client.post("/api/chat/stream", json=message("a", "x" * 5000))
    assert huge.status_code == 413
    assert detail_of(huge.json())["code"] == "body_too_large"
    unknown = await client.post("/api/chat/stream", json=message("a", "x", agent="zed"))
    assert unknown.status_code == 404 and "zed" in detail_of(unknown.json())["message"]
    assert detail_of(unknown.json())["code"] == "agent_not_found"
    assert (await client.get("/api/sessions")).json() == []


async def test_openapi_documents_every_route(client_for: Any) -> None:
    schema = (await client_for(_app(demo_agent())).get("/api/openapi.json")).json()
    paths = set(schema["paths"])
    assert {
        "/api/info",
        "/api/agents",
        "/api/agents/{name}",
        "/api/chat",
        "/api/chat/stream",
        "/api/chat/reconnect",
        "/api/chat/approve",
        "/api/chat/answer",
        "/api/chat/cancel",
        "/api/chat/inject",
        "/api/chat/uninject",
        "/api/sessions",
        "/api/sessions/{session_id}",
        "/api/sessions/{session_id}/rewind",
        "/api/sessions/{session_id}/fork",
        "/api/sessions/{session_id}/export",
        "/api/sessions/{session_id}/todos",
        "/api/sessions/{session_id}/followups",
        "/api/sessions/{session_id}/ui-data/{ref}",
        "/api/sessions/{session_id}/tool-images/{call_id}/{index}",
        "/api/sessions/{session_id}/processes",
        "/api/runs",
        "/api/runs/history",
        "/api/runs/resumable",
        "/api/events",
    } <= paths
    assert not any(p.startswith("/api/chats") or p == "/api/health" for p in paths)


async def test_an_unfinished_runs_title_skips_a_blank_first_message(client_for: Any) -> None:
    """The resumable list titles a run as chat listings do: by its first non-blank message."""
    from lovia import CheckpointOptions, Runner

    session, cp = _stores()
    agent = Agent("dry", model=ScriptedProvider([]))  # fails at once: the run stays pending
    question = [InputEntry(role="user", content="   "), InputEntry(role="user", content="why?")]
    try:
        await Runner.run(
            agent,
            question,
            session=session,
            session_id="c",
            checkpoint=CheckpointOptions(cp, "r1"),
        )
    except Exception:
        pass
    client = client_for(_app(agent, session=session, checkpointer=cp))
    offered = (await client.get("/api/runs/resumable")).json()
    assert [(r["run_id"], r["title"]) for r in offered] == [("r1", "why?")]


async def test_a_chunked_body_over_the_limit_gets_413_and_one_under_it_works(
    client_for: Any,
) -> None:
    """A body sent without Content-Length is counted as it arrives: 413 past the limit."""
    client = client_for(_app(demo_agent(delay=0), max_body_bytes=2048))

    async def chunks(total: int) -> Any:
        body = ('{"message": "' + "x" * total + '", "session_id": "a"}').encode()
        for start in range(0, len(body), 500):
            yield body[start : start + 500]

    huge = await client.post("/api/chat/stream", content=chunks(5000))
    assert "content-length" not in huge.request.headers
    assert huge.status_code == 413, huge.text
    assert "2048" in detail_of(huge.json())["message"]
    small = await client.post(
        "/api/chat/stream",
        content=chunks(100),
        headers={"Content-Type": "application/json"},
    )
    assert events_of(small)[-1]["event"] == "done"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"message": "\\ud800", "session_id": "c1"}', "message"),
        (b'{"message": "a", "session_id": "c1", "extra": "\\udfff"}', "extra"),
        (b'{"message": "   \\n ", "session_id": "c1"}', "empty"),
        (b'{"message": "a\\u0000b", "session_id": "c1"}', "NUL"),
    ],
)
async def test_bodies_that_cannot_be_stored_get_422_and_write_nothing(
    client_for: Any, body: bytes, says: str
) -> None:
    """Issue 14 items 11, 15: a lone surrogate (even in a field that is refused) gets a clear
    422, not a 500 from the error handler; a blank message or one with NUL is refused."""
    session, cp = _stores()
    client = client_for(_app(demo_agent(delay=0), session=session, checkpointer=cp))
    refused = await client.post(
        "/api/chat/stream", content=body, headers={"content-type": "application/json"}
    )
    assert refused.status_code == 422, refused.text
    assert says in str(refused.json()["detail"])
    assert await session.load("c1") == [] and await cp.list_runs() == []


async def test_a_huge_after_is_refused_not_a_500(client_for: Any) -> None:
    client = client_for(_app(demo_agent(delay=0)))
    huge = await client.post(f"/api/chat/reconnect{sid('g')}", params={"after": "9" * 5000})
    assert huge.status_code == 422


async def test_a_run_a_worker_drives_is_marked_busy_elsewhere(client_for: Any) -> None:
    """A pending run whose lease a live worker holds (``lovia runs resume`` in a terminal, a
    queue worker) is not offered as cut off, in the resumable list and on its chat."""
    from lovia import CheckpointOptions, Runner

    session, cp = _stores()
    agent = Agent("dry", model=ScriptedProvider([]))  # fails at once: the run stays pending
    with pytest.raises(AssertionError):
        await Runner.run(
            agent, "why?", session=session, session_id="c", checkpoint=CheckpointOptions(cp, "r1")
        )
    client = client_for(_app(agent, session=session, checkpointer=cp))
    [offered] = (await client.get("/api/runs/resumable")).json()
    assert offered["run_id"] == "r1" and offered["busy_elsewhere"] is False
    assert (await client.get(chat_path("c"))).json()["busy_elsewhere"] is False
    assert await cp.acquire_lease("r1", "worker-on-host-b", 30.0)
    [offered] = (await client.get("/api/runs/resumable")).json()
    assert offered["busy_elsewhere"] is True
    assert (await client.get(chat_path("c"))).json()["busy_elsewhere"] is True
    await cp.release_lease("r1", "worker-on-host-b")
    [offered] = (await client.get("/api/runs/resumable")).json()
    assert offered["busy_elsewhere"] is False
