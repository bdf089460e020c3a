"""Chats stored by a program under any session id open, go on, stop and delete over HTTP.

A real uvicorn on 127.0.0.1 serves the demo agent on a SQLite file that ``Runner.run`` wrote
first, under ids such as ``alice@example.com``, ``team/alice`` and ``Zoë 1``. The API names
them in the URL as ``~`` + base64url (any id), or as they are, percent-encoded (ids without
``/``); ids it cannot serve get 422 (400 for an encoded ``/``) with ``{detail, hint}``.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from lovia import Agent, Runner, SQLiteSession
from lovia.testing import ScriptedProvider, text
from lovia.web.ids import chat_segment, read_chat_segment

from .conftest import decode
from .test_browser import Server

ODD_IDS = [
    "alice@example.com",
    "team/alice",
    "Zoë 1",
    "..",
    ".",
    "~tilde",
    "a b/c?d#e%f&g=h",
    "../chats/victim",
    '<img src=x onerror="alert(1)">',
    "日本語のチャット",
    "emoji 🦉",
    "x" * 512,
]


def write_chats(db: Path, ids: list[str]) -> None:
    """One stored conversation per id, written as a program would, in ``db``."""

    async def write() -> None:
        session = SQLiteSession(db, wal=True)
        for sid in ids:
            agent = Agent("assistant", model=ScriptedProvider([text(f"hello {sid}")]))
            await Runner.run(agent, f"hi from {sid}", session=session, session_id=sid)
        await session.close()

    # on a thread of its own: a caller's thread may own an event loop (Playwright's sync API)
    writer = threading.Thread(target=lambda: asyncio.run(write()))
    writer.start()
    writer.join()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Server]]:
    db = tmp_path / "chats.db"
    write_chats(db, ["victim", *ODD_IDS])
    with Server(db) as server:
        yield server.url.rstrip("/"), server


def _texts(chat: dict[str, Any]) -> list[Any]:
    return [m["content"] for m in chat["entries"] if m["role"] in ("user", "assistant")]


def _events(response: httpx.Response) -> list[dict[str, Any]]:
    return decode(response.text)


def _stream(chat_id: str, text: str) -> dict[str, Any]:
    return {"message": text, "session_id": chat_id}


def test_every_stored_id_is_listed_opened_continued_and_deleted(
    served: tuple[str, Server],
) -> None:
    base, server = served
    listed = {c["id"] for c in httpx.get(f"{base}/api/sessions").json()}
    assert listed == {"victim", *ODD_IDS}
    for chat_id in ODD_IDS:
        url = f"{base}/api/sessions/{chat_segment(chat_id)}"
        chat = httpx.get(url).json()
        assert chat["id"] == chat_id
        assert _texts(chat) == [f"hi from {chat_id}", f"hello {chat_id}"]
        sent = httpx.post(f"{base}/api/chat/stream", json=_stream(chat_id, "hello"), timeout=60)
        assert _events(sent)[-1]["event"] == "done", sent.text
        stored = [e.content for s in server.segments(chat_id) for e in s.entries]
        assert stored[0] == f"hi from {chat_id}" and stored[2] == "hello" and len(stored) == 4
    for chat_id in ODD_IDS:
        deleted = httpx.delete(f"{base}/api/sessions/{chat_segment(chat_id)}")
        assert deleted.status_code == 200 and deleted.json()["ok"] is True
        assert server.segments(chat_id) == []
    assert [c["id"] for c in httpx.get(f"{base}/api/sessions").json()] == ["victim"]
    assert _texts(httpx.get(f"{base}/api/sessions/victim").json()) == [
        "hi from victim",
        "hello victim",
    ]


def test_ids_without_a_slash_also_go_as_they_are(served: tuple[str, Server]) -> None:
    base, _ = served
    for chat_id in ("alice@example.com", "Zoë 1", "日本語のチャット", "emoji 🦉"):
        chat = httpx.get(f"{base}/api/sessions/{quote(chat_id, safe='')}").json()
        assert chat["id"] == chat_id and _texts(chat)[0] == f"hi from {chat_id}"
    # the short ids of earlier versions keep their URLs, in both directions
    assert chat_segment("victim") == "victim" and chat_segment("a:b.c-d_e") == "a:b.c-d_e"
    assert httpx.get(f"{base}/api/sessions/victim").json()["id"] == "victim"


def test_a_live_run_of_an_odd_id_is_followed_and_stopped(served: tuple[str, Server]) -> None:
    base, server = served
    url = f"{base}/api/sessions/{chat_segment('team/alice')}"
    query = f"?session_id={quote('team/alice', safe='')}"
    body = _stream("team/alice", "wait 30")
    with httpx.stream("POST", f"{base}/api/chat/stream", json=body, timeout=60) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line == "event: tool_call":
                break
        listed = {c["id"]: c for c in httpx.get(f"{base}/api/sessions").json()}
        assert listed["team/alice"]["live"] is not None
        assert httpx.get(url).json()["live"] is not None
        with httpx.stream("POST", f"{base}/api/chat/reconnect{query}", timeout=60) as follow:
            assert follow.status_code == 200
            stopped = httpx.post(f"{base}/api/chat/cancel{query}", timeout=30)
            assert stopped.status_code == 200 and stopped.json()["stopped"]
            last = decode(follow.read().decode())[-1]
        assert last["event"] == "error" and last["stopped"] and last["code"] == "cancelled"
    assert httpx.get(url).json()["live"] is None
    assert [e.content for s in server.segments("team/alice") for e in s.entries][-1] == "wait 30"
    again = httpx.post(f"{base}/api/chat/cancel{query}")
    assert again.json()["stopped"] is None  # nothing left to stop


def test_the_blocking_route_takes_any_servable_session_id(served: tuple[str, Server]) -> None:
    base, server = served
    for chat_id in ("alice@example.com", "team/alice"):
        answer = httpx.post(
            f"{base}/api/chat", json={"message": "hello", "session_id": chat_id}, timeout=60
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["session_id"] == chat_id
        assert len([e for s in server.segments(chat_id) for e in s.entries]) == 4
    for bad in ("", "a\nb", "x" * 513, "bell\x07"):
        refused = httpx.post(f"{base}/api/chat", json={"message": "hi", "session_id": bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["detail"] and refused.json()["hint"]


def _b64(raw: bytes) -> str:
    return "~" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


REFUSED = [
    ("x" * 513, 422, "513 characters"),
    (_b64(("y" * 513).encode()), 422, "513 characters"),
    ("a%01b", 422, "U+0001"),
    ("a%00b", 422, "U+0000"),
    ("line%0Abreak", 422, "U+000A"),
    (_b64(b"tab\there"), 422, "U+0009"),
    ("~", 422, "empty"),
    ("~not*base64", 422, "base64url"),
    ("~YWJj=", 422, "base64url"),
    ("~YR", 422, "canonical"),  # "YQ" is the one spelling of "a"
    (_b64(b"\xff\xfe"), 422, "UTF-8"),
    ("team%2Falice", 400, "%2F"),
    ("x%2Fevents", 400, "%2F"),
    ("..%2F..%2Fetc%2Fpasswd", 400, "%2F"),
    ("Zo%EB%201", 400, "not UTF-8"),  # Latin-1 escapes would be read as "Zo\ufffd 1"
    ("%C0%AE%C0%AE", 400, "not UTF-8"),  # an overlong "..", not UTF-8 either
]


@pytest.mark.parametrize(("segment", "status", "said"), REFUSED)
def test_ids_the_app_cannot_serve_are_refused_with_a_hint(
    served: tuple[str, Server], segment: str, status: int, said: str
) -> None:
    base, _ = served
    before = {c["id"] for c in httpx.get(f"{base}/api/sessions").json()}
    for method, suffix, body in (
        ("GET", "", None),
        ("DELETE", "", None),
        ("PATCH", "", {"title": "x"}),
        ("POST", "/rewind", {"user_turn": 0}),
        ("POST", "/fork", {}),
        ("GET", "/export", None),
    ):
        answer = httpx.request(method, f"{base}/api/sessions/{segment}{suffix}", json=body)
        assert answer.status_code == status, (method, segment, answer.text)
        data = answer.json()["detail"]
        assert said in data["message"] and "'~'" in data["hint"], data
    assert {c["id"] for c in httpx.get(f"{base}/api/sessions").json()} == before


def test_the_tilde_form_reads_back_every_id() -> None:
    for chat_id in [*ODD_IDS, "victim", "A", "0", "a:b", "~", "~~", " ", "\u202e", "\ufeff"]:
        segment = chat_segment(chat_id)
        assert quote(segment, safe="~:") == segment  # nothing to percent-encode
        assert read_chat_segment(segment) == chat_id
    with pytest.raises(ValueError, match="control character"):
        read_chat_segment("a\x7fb")
    with pytest.raises(ValueError, match="lone surrogate"):
        read_chat_segment("a\ud800")


def test_reading_a_chat_does_not_reach_another_through_dots(served: tuple[str, Server]) -> None:
    """A client that does not normalise paths (raw HTTP) may send '..' as it is; the route
    takes it as the id '..', never as a step up to another route."""
    base, _ = served
    host, port = base.removeprefix("http://").split(":")

    def raw(path: str) -> str:
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "replace")

    dots = raw("/api/sessions/..")
    assert " 200 " in dots.splitlines()[0] and '"id":".."' in dots
    up = raw("/api/sessions/../sessions/victim")
    assert " 404 " in up.splitlines()[0] and "hi from victim" not in up
