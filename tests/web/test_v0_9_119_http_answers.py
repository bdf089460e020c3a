"""Answers a 0.9.119 client gets from the same requests on both servers (issue 30's HTTP
comparison): a reconnect's stream opens with the ``session`` frame, follow-ups and a fork
of an unknown chat are ``404 session_not_found``, and a schedule that names no agent on a
server of several is ``400 invalid_request``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import AssistantTextEntry, InputEntry
from lovia.web import ChatStore

from .apps import Stateless
from .conftest import chat_path, decode, detail_of, web_app
from .test_browser import Server

EVERY_HOUR = {"input": "report", "trigger_kind": "every", "trigger_expr": "3600"}


def _events_until(chunks: Iterator[str], count: int | None = None) -> list[dict[str, Any]]:
    """The events read from an SSE body's ``chunks``: the first ``count``, else all."""
    body = ""
    for chunk in chunks:
        body += chunk.replace("\r\n", "\n")
        if count is not None and len(decode(body.rsplit("\n\n", 1)[0] + "\n\n")) >= count:
            break
    return decode(body.rsplit("\n\n", 1)[0] + "\n\n")[:count]


def test_a_reconnect_opens_with_the_session_frame(tmp_path: Path) -> None:
    released = threading.Event()

    @tool
    async def hold() -> str:
        """Returns once the test lets it."""
        while not released.is_set():  # noqa: ASYNC110 - set from the test's thread
            await asyncio.sleep(0.02)
        return "let go"

    def turn(messages: Any) -> Any:
        return text("done") if messages[-1].role == "tool" else call("hold", {}, call_id="h1")

    agent = Agent("holder", model=Stateless(turn), tools=[hold])
    with Server(tmp_path / "chats.db", agents=agent) as running:
        base = running.url.rstrip("/")
        sent = {"message": "go", "session_id": "c1"}
        with httpx.stream("POST", f"{base}/api/chat/stream", json=sent, timeout=30) as first:
            chunks = first.iter_text()
            seen = _events_until(chunks, 4)
            assert seen[-1]["event"] == "tool_call"  # the run waits in its tool now
            follow = httpx.stream(
                "POST", f"{base}/api/chat/reconnect", params={"session_id": "c1"}, timeout=30
            )
            with follow as again:
                head = _events_until(again.iter_text(), 2)
            released.set()
            ended = _events_until(chunks)
    # 0.9.119 opens every chat stream, a reconnect's too, with the chat's id
    assert head[0] == {"event": "session", "session_id": "c1"}
    assert head[1]["event"] == "snapshot" and head[1]["session_id"] == "c1"
    assert ended[-1]["event"] == "done"


async def test_follow_ups_and_a_fork_of_an_unknown_chat_are_not_found(
    client_for: Any,
) -> None:
    store = ChatStore.in_memory()
    said = [InputEntry(role="user", content="hi"), AssistantTextEntry(content="hello")]
    await store.session.append("stored", said, run_id="r1")  # a program's chat
    agent = Agent("bot", model=ScriptedProvider([text("hi")]))
    client = client_for(web_app(agent, store=store))
    for path in ("/followups", "/fork"):
        unknown = await client.post(chat_path("nobody", path), json={})
        assert unknown.status_code == 404, unknown.text
        assert detail_of(unknown.json())["code"] == "session_not_found"
    at_ref = await client.post(chat_path("nobody", "/fork"), json={"ref": "r1:0"})
    assert detail_of(at_ref.json())["code"] == "session_not_found"
    # a chat only the session store holds is a chat all the same
    assert (await client.post(chat_path("stored", "/followups"))).json() == {"followups": []}
    forked = await client.post(chat_path("stored", "/fork"), json={})
    assert forked.status_code == 200, forked.text


async def test_a_schedule_naming_no_agent_of_several_is_refused(client_for: Any) -> None:
    def agent(name: str) -> Agent:
        return Agent(name, model=ScriptedProvider([text("ok")]))

    two = client_for(web_app({"a": agent("a"), "b": agent("b")}))
    refused = await two.post("/api/schedules", json=EVERY_HOUR)
    assert refused.status_code == 400
    assert detail_of(refused.json())["code"] == "invalid_request"
    assert "a, b" in detail_of(refused.json())["hint"]
    assert (await two.get("/api/schedules")).json() == []
    named = await two.post("/api/schedules", json={**EVERY_HOUR, "agent": "b"})
    assert named.json()["agent"] == "b"
    one = client_for(web_app({"a": agent("a")}))
    assert (await one.post("/api/schedules", json=EVERY_HOUR)).json()["agent"] == "a"
