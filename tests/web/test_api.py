"""The HTTP API through the real ASGI app: chats, streaming, stop, edit, regenerate, follow."""

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

from .conftest import events_of


def _stores() -> tuple[InMemorySession, InMemoryCheckpointer]:
    return InMemorySession(), InMemoryCheckpointer()


async def test_health_names_the_agents_and_the_setup_hint_when_none(client_for: Any) -> None:
    ok = await client_for(create_app(demo_agent())).get("/api/health")
    assert ok.json()["agents"] == [{"name": "demo", "demo": True, "usable": True}]
    assert ok.json()["setup_hint"] is None
    bare = await client_for(create_app({})).get("/api/health")
    hint = bare.json()["setup_hint"]
    assert "LOVIA_MODEL" in hint and "OPENAI_API_KEY" in hint and "ANTHROPIC_API_KEY" in hint
    refused = await client_for(create_app({})).post(
        "/api/chats/c1/messages", json={"content": "hi"}
    )
    assert refused.status_code == 400 and "LOVIA_MODEL" in refused.json()["hint"]


async def test_a_message_streams_lovia_events_and_lands_in_the_chat(client_for: Any) -> None:
    session, cp = _stores()
    app = create_app(demo_agent(delay=0), session=session, checkpointer=cp)
    client = client_for(app)
    created = await client.post("/api/chats")
    assert created.status_code == 201
    chat = created.json()["id"]
    events = events_of(await client.post(f"/api/chats/{chat}/messages", json={"content": "hi"}))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_completed"
    assert kinds.count("text_delta") > 3  # the demo streams word by word
    streamed = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    assert streamed == events[-1]["result"]["output"]
    detail = (await client.get(f"/api/chats/{chat}")).json()
    assert [e["type"] for e in detail["entries"]] == ["input", "assistant_text"]
    assert detail["entries"][1]["content"] == streamed
    assert detail["title"] == "hi" and detail["live"] is None and detail["pending"] is None
    listed = (await client.get("/api/chats")).json()
    assert [c["id"] for c in listed] == [chat] and listed[0]["title"] == "hi"
    run_id = events[0]["run_id"]
    snap = await cp.load(run_id)
    assert snap is not None and snap.status == "completed"  # every run is checkpointed


async def test_tool_calls_stream_with_arguments_and_results(client_for: Any) -> None:
    client = client_for(create_app(demo_agent(delay=0)))
    events = events_of(
        await client.post("/api/chats/calc/messages", json={"content": "calculate 6 * 7"})
    )
    started = next(e for e in events if e["type"] == "tool_call_started")
    done = next(e for e in events if e["type"] == "tool_call_completed")
    assert started["call"]["name"] == "calculate" and "6 * 7" in started["call"]["arguments"]
    assert done["output"] == "42" and done["is_error"] is False


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
    run_id = (await client.get(f"/api/chats/{chat}")).json()["live"]["run_id"]

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
    client = client_for(create_app(agent, session=session, checkpointer=cp))
    sending = asyncio.ensure_future(client.post("/api/chats/c/messages", json={"content": "go"}))
    await started.wait()
    run_id = await _fast_result_saved(client, cp, "c")  # one call answered, one running
    busy = await client.post("/api/chats/c/regenerate")
    assert busy.status_code == 409  # one live run per chat (a message would join it)
    stop = await client.post("/api/chats/c/stop")
    assert stop.status_code == 200
    assert stop.json()["stopped"] == run_id
    events = events_of(await sending)
    assert events[-1]["type"] == "run_failed" and events[-1]["stopped"] is True
    assert events[-1]["error"]["type"] == "RunCancelled"
    stored = await session.load("c")
    assert stored == drop_dangling_tool_calls(stored)
    assert [type(e) for e in stored] == [InputEntry, ToolCallEntry, ToolResultEntry]
    assert isinstance(stored[1], ToolCallEntry) and stored[1].name == "fast"
    segments = await session.segments("c")
    assert [s.run_id for s in segments] == [run_id]
    assert await cp.load(run_id) is None
    # the chat goes on from the saved partial run
    after = events_of(await client.post("/api/chats/c/messages", json={"content": "next"}))
    assert after[-1]["type"] == "run_completed"
    assert after[-1]["result"]["output"] == "second answer"


async def test_stop_while_streaming_keeps_the_text_seen_so_far(client_for: Any) -> None:
    session, cp = _stores()
    app = create_app(demo_agent(delay=0.01), session=session, checkpointer=cp)
    client = client_for(app)
    sending = asyncio.ensure_future(
        client.post("/api/chats/s/messages", json={"content": "tell me a story"})
    )
    while True:
        detail = (await client.get("/api/chats/s")).json()
        if (detail.get("live") or {}).get("events", 0) > 6:
            break
        await asyncio.sleep(0.01)
    await client.post("/api/chats/s/stop")
    events = events_of(await sending)
    streamed = "".join(e["delta"] for e in events if e["type"] == "text_delta")
    stored = await session.load("s")
    assert isinstance(stored[-1], AssistantTextEntry)
    assert stored[-1].content == streamed and streamed.startswith("Once upon a time")
    assert not events[-1]["type"] == "run_completed"
    assert await cp.list_runs() == []


async def _two_exchanges(client: Any, chat: str) -> list[str]:
    run_ids = []
    for question in ("calculate 1 + 1", "hello there"):
        events = events_of(
            await client.post(f"/api/chats/{chat}/messages", json={"content": question})
        )
        run_ids.append(events[0]["run_id"])
    return run_ids


async def test_edit_rewinds_to_the_message_and_answers_the_new_text(client_for: Any) -> None:
    """S10/S11: history cut exactly before the edited message; rewound runs' checkpoints go."""
    session, cp = _stores()
    client = client_for(create_app(demo_agent(delay=0), session=session, checkpointer=cp))
    first, second = await _two_exchanges(client, "e")
    before = await session.load("e")
    index = next(i for i, e in enumerate(before) if isinstance(e, InputEntry) and i > 0)
    events = events_of(
        await client.post("/api/chats/e/edit", json={"index": index, "content": "calculate 2*5"})
    )
    assert events[-1]["result"]["output"] == "The result is **10**."
    after = await session.load("e")
    assert after[:index] == before[:index]
    assert after[index] == InputEntry(role="user", content="calculate 2*5")
    assert await cp.load(second) is None  # the rewound run's checkpoint is gone
    assert await cp.load(first) is not None  # the kept run's is not
    # editing the very first message empties everything before the new run
    events_of(await client.post("/api/chats/e/edit", json={"index": 0, "content": "hi"}))
    assert [e.type for e in await session.load("e")] == ["input", "assistant_text"]
    assert await cp.load(first) is None


async def test_edit_refuses_an_index_that_is_not_a_user_message(client_for: Any) -> None:
    session, cp = _stores()
    client = client_for(create_app(demo_agent(delay=0), session=session, checkpointer=cp))
    await _two_exchanges(client, "x")
    before = await session.load("x")
    bad = await client.post("/api/chats/x/edit", json={"index": 1, "content": "no"})
    assert bad.status_code == 400 and "not a user message" in bad.json()["detail"]
    past = await client.post("/api/chats/x/edit", json={"index": 99, "content": "no"})
    assert past.status_code == 400
    assert await session.load("x") == before


async def test_regenerate_replaces_only_the_last_answer(client_for: Any) -> None:
    session, cp = _stores()
    answers = ScriptedProvider([text("one"), text("two"), text("two again")])
    client = client_for(create_app(Agent("r", model=answers), session=session, checkpointer=cp))
    for q in ("q1", "q2"):
        events_of(await client.post("/api/chats/r/messages", json={"content": q}))
    old_run = (await session.segments("r"))[-1].run_id
    events = events_of(await client.post("/api/chats/r/regenerate"))
    assert events[-1]["result"]["output"] == "two again"
    assert [getattr(e, "content", None) for e in await session.load("r")] == [
        "q1",
        "one",
        "q2",
        "two again",
    ]
    assert await cp.load(old_run) is None
    assert answers.calls[-1][-1] == Message(role="user", content="q2")
    empty = await client.post("/api/chats/none/regenerate")
    assert empty.status_code == 400


async def test_a_reconnecting_client_gets_the_missed_events_then_the_rest(
    client_for: Any,
) -> None:
    agent, started = _gate_agent()
    app, begun = _answers_begun(create_app(agent))
    client = client_for(app)
    sending = asyncio.ensure_future(client.post("/api/chats/f/messages", json={"content": "go"}))
    await started.wait()
    live = (await client.get("/api/chats/f")).json()["live"]
    assert live["input"] == "go" and live["events"] >= 3
    following = asyncio.ensure_future(client.get("/api/chats/f/events"))
    resumed = asyncio.ensure_future(
        client.get("/api/chats/f/events", headers={"Last-Event-ID": "2"})
    )

    async def both_follow() -> bool:  # a follow arriving after the run ended would be a 404
        return begun.count("/api/chats/f/events") == 2

    await _until(both_follow, "both follows to reach the live run")
    await client.post("/api/chats/f/stop")
    original = events_of(await sending)
    replayed = events_of(await following)
    assert replayed == original  # everything from the first event, through the terminal one
    tail = events_of(await resumed)
    assert tail == original[2:]
    gone = await client.get("/api/chats/f/events")
    assert gone.status_code == 404


async def test_delete_removes_the_chat_and_its_checkpoints(client_for: Any) -> None:
    session, cp = _stores()
    client = client_for(create_app(demo_agent(delay=0), session=session, checkpointer=cp))
    events = events_of(await client.post("/api/chats/d/messages", json={"content": "hi"}))
    deleted = await client.delete("/api/chats/d")
    assert deleted.json()["runs_deleted"] == [events[0]["run_id"]]
    assert await session.load("d") == []
    assert await cp.list_runs() == []
    assert (await client.get("/api/chats/d")).status_code == 404
    assert (await client.get("/api/chats")).json() == []


async def test_stop_without_a_run_is_a_conflict(client_for: Any) -> None:
    client = client_for(create_app(demo_agent(delay=0)))
    assert (await client.post("/api/chats/q/stop")).status_code == 409


async def test_bad_bodies_and_ids_are_refused(client_for: Any) -> None:
    client = client_for(create_app(demo_agent(delay=0), max_body_bytes=2048))
    empty = await client.post("/api/chats/a/messages", json={"content": ""})
    assert empty.status_code == 422
    extra = await client.post("/api/chats/a/messages", json={"content": "x", "evil": 1})
    assert extra.status_code == 422
    negative = await client.post("/api/chats/a/edit", json={"index": -1, "content": "x"})
    assert negative.status_code == 422
    bad_id = await client.get("/api/chats/..%2Fetc")
    assert bad_id.status_code == 400 and "'~'" in bad_id.json()["hint"]
    huge = await client.post("/api/chats/a/messages", json={"content": "x" * 5000})
    assert huge.status_code == 413
    unknown = await client.post("/api/chats/a/messages", json={"content": "x", "agent": "zed"})
    assert unknown.status_code == 400 and "zed" in unknown.json()["detail"]


async def test_openapi_documents_every_route(client_for: Any) -> None:
    schema = (await client_for(create_app(demo_agent())).get("/openapi.json")).json()
    paths = set(schema["paths"])
    assert {
        "/api/health",
        "/api/chats",
        "/api/chats/{chat_id}",
        "/api/chats/{chat_id}/messages",
        "/api/chats/{chat_id}/stop",
        "/api/chats/{chat_id}/edit",
        "/api/chats/{chat_id}/regenerate",
        "/api/chats/{chat_id}/events",
        "/api/chats/{chat_id}/resume",
        "/api/runs/resumable",
    } <= paths


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
    client = client_for(create_app(agent, session=session, checkpointer=cp))
    offered = (await client.get("/api/runs/resumable")).json()
    assert [(r["run_id"], r["title"]) for r in offered] == [("r1", "why?")]


async def test_a_chunked_body_over_the_limit_gets_413_and_one_under_it_works(
    client_for: Any,
) -> None:
    """A body sent without Content-Length is counted as it arrives: 413 past the limit."""
    client = client_for(create_app(demo_agent(delay=0), max_body_bytes=2048))

    async def chunks(total: int) -> Any:
        body = ('{"content": "' + "x" * total + '"}').encode()
        for start in range(0, len(body), 500):
            yield body[start : start + 500]

    huge = await client.post("/api/chats/a/messages", content=chunks(5000))
    assert "content-length" not in huge.request.headers
    assert huge.status_code == 413, huge.text
    assert "2048" in huge.json()["detail"]
    small = await client.post(
        "/api/chats/a/messages",
        content=chunks(100),
        headers={"Content-Type": "application/json"},
    )
    assert events_of(small)[-1]["type"] == "run_completed"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"content": "\\ud800"}', "content"),
        (b'{"content": "a", "extra": "\\udfff"}', "extra"),
        (b'{"content": "   \\n "}', "blank"),
        (b'{"content": "a\\u0000b"}', "NUL"),
    ],
)
async def test_bodies_that_cannot_be_stored_get_422_and_write_nothing(
    client_for: Any, body: bytes, says: str
) -> None:
    """Issue 14 items 11, 15: a lone surrogate (even in a field that is refused) gets a clear
    422, not a 500 from the error handler; a blank message or one with NUL is refused."""
    session, cp = _stores()
    client = client_for(create_app(demo_agent(delay=0), session=session, checkpointer=cp))
    refused = await client.post(
        "/api/chats/c1/messages", content=body, headers={"content-type": "application/json"}
    )
    assert refused.status_code == 422, refused.text
    assert says in refused.json()["detail"]
    assert await session.load("c1") == [] and await cp.list_runs() == []


@pytest.mark.parametrize("last_id", ["9" * 5000, "²", "-1", "1e3"])
async def test_a_strange_last_event_id_is_ignored_not_a_500(client_for: Any, last_id: str) -> None:
    """The follow must reach the server while the run is live (a run that ended first gives
    404, and the trial is repeated); it then replays the run from its first event."""
    replayed = False
    for trial in range(10):
        agent, started = _gate_agent()
        client = client_for(create_app(agent))
        chat = f"/api/chats/g{trial}"
        sending = asyncio.ensure_future(client.post(f"{chat}/messages", json={"content": "go"}))
        await started.wait()
        following = asyncio.ensure_future(
            client.get(f"{chat}/events", headers={"last-event-id": last_id.encode()})
        )
        huge = await client.get(f"{chat}/events", params={"after": "9" * 5000})
        assert huge.status_code == 422
        assert (await client.post(f"{chat}/stop")).status_code == 200
        followed = await following
        await sending
        assert followed.status_code in (200, 404), followed.text
        if followed.status_code == 200:
            assert events_of(followed)[0]["type"] == "run_started"
            replayed = True
            break
    assert replayed


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
    client = client_for(create_app(agent, session=session, checkpointer=cp))
    [offered] = (await client.get("/api/runs/resumable")).json()
    assert offered["run_id"] == "r1" and offered["busy_elsewhere"] is False
    assert (await client.get("/api/chats/c")).json()["busy_elsewhere"] is False
    assert await cp.acquire_lease("r1", "worker-on-host-b", 30.0)
    [offered] = (await client.get("/api/runs/resumable")).json()
    assert offered["busy_elsewhere"] is True
    assert (await client.get("/api/chats/c")).json()["busy_elsewhere"] is True
    await cp.release_lease("r1", "worker-on-host-b")
    [offered] = (await client.get("/api/runs/resumable")).json()
    assert offered["busy_elsewhere"] is False
