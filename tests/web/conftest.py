"""Fixtures for the web tests: the real ASGI app behind an httpx client, and the chat API's
requests and SSE events as the tests use them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from lovia.web import ChatStore, create_app
from lovia.web.ids import chat_segment


@pytest.fixture(autouse=True)
def _own_folder(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in a folder of its own: an app made without stores keeps its chats in
    ``./.lovia/<agent>.db``, which must not land in the checkout."""
    monkeypatch.chdir(tmp_path)


def web_app(agents: Any, **kw: Any) -> Any:
    """``create_app`` for a test: chats in memory (unless stores are given) and no titles
    made in the background (they would call the test's model)."""
    kw.setdefault("titles", False)
    if not {"store", "session", "checkpointer", "db_path"} & set(kw):
        kw["store"] = ChatStore.in_memory()
    return create_app(agents, **kw)


def make_client(app: Any, **kwargs: Any) -> httpx.AsyncClient:
    kwargs.setdefault("base_url", "http://127.0.0.1")
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), **kwargs)


@pytest.fixture
async def client_for() -> AsyncIterator[Any]:
    made: list[httpx.AsyncClient] = []

    def build(app: Any, **kwargs: Any) -> httpx.AsyncClient:
        c = make_client(app, **kwargs)
        made.append(c)
        return c

    yield build
    for c in made:
        await c.aclose()


def decode(body: str) -> list[dict[str, Any]]:
    """The events of an SSE body, each as ``{"event": <event name>, **data}`` (and the
    frame's ``id`` as ``"frame_id"`` when it has one); comment lines are skipped."""
    out: list[dict[str, Any]] = []
    for frame in body.replace("\r\n", "\n").split("\n\n"):
        name, frame_id, data = None, None, []
        for line in frame.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("id:"):
                frame_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if name is None or not data:
            continue
        value = json.loads("\n".join(data))
        event = {"event": name, **(value if isinstance(value, dict) else {"data": value})}
        if frame_id is not None:
            event["frame_id"] = frame_id
        out.append(event)
    return out


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    """The chat-stream events of an SSE response, in order."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return decode(response.text)


def chat_path(chat_id: str, suffix: str = "") -> str:
    """The path of a chat's route: ``/api/sessions/<id or its ~ form><suffix>``."""
    return f"/api/sessions/{chat_segment(chat_id)}{suffix}"


def sid(chat_id: str) -> str:
    """``?session_id=...`` for the chat routes that take it in the query."""
    return f"?session_id={quote(chat_id, safe='')}"


def message(chat_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """The body of ``POST /api/chat/stream`` (and ``/api/chat``)."""
    return {"message": text, "session_id": chat_id, **extra}


def detail_of(body: dict[str, Any]) -> dict[str, Any]:
    """An error body's ``detail`` (``{code, message, hint}``)."""
    found = body["detail"]
    assert isinstance(found, dict), body
    return found


def user_ref(detail: dict[str, Any], n: int = -1) -> str:
    """The ``ref`` of the chat's ``n``-th user message (the last by default)."""
    refs = [m["ref"] for m in detail["entries"] if m["role"] == "user"]
    return str(refs[n])


async def until(check: Any) -> Any:
    """``await check()`` every 20 ms until it gives something true (10 s at most), and that."""
    for _ in range(500):
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError("the condition never held")


async def approve_when_asked(client: Any, chat_id: str, call_id: str) -> None:
    """Wait until the chat's run waits for a person on a call, then approve ``call_id``."""

    async def waiting() -> bool:
        chat = (await client.get(f"/api/sessions/{chat_id}")).json()
        return bool((chat.get("pending") or {}).get("approvals"))

    await until(waiting)
    decision = {"session_id": chat_id, "call_id": call_id, "decision": "approve"}
    answer = await client.post("/api/chat/approve", json=decision)
    assert answer.status_code == 200, answer.text
