"""0.9.119's web behaviour that its own tests check, on a real server (``parity_server``):
tool images in the stream, a provider's context window, an approval decided while the
stream waits, a second blocking turn refused, a stop that frees a run waiting on a person,
rewind on a store that cannot, the export layouts, a compaction notice in a chat's detail,
and ``ChatUI``'s checks. The agent is served under another name than its own (as 0.9.119's
CLI serves ``lovia`` as ``assistant``), which a resumed run must keep."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia.errors import UserError
from lovia.web import ChatUI

from ..web_server import ROOT, free_port, stop_web, wait_until_ready


class Server:
    def __init__(self, base: str, release: Path) -> None:
        self.base = base
        self.release = release
        self.client = httpx.Client(base_url=base, timeout=30)

    def stream(self, message: str, session_id: str | None = None) -> list[tuple[str, Any]]:
        """Every ``(event, data)`` of a ``POST /api/chat/stream``, until it ends."""
        body: dict[str, Any] = {"message": message}
        if session_id:
            body["session_id"] = session_id
        with self.client.stream("POST", "/api/chat/stream", json=body) as response:
            assert response.status_code == 200, response.read()
            return parse(response.iter_lines())


def parse(lines: Any) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    name = ""
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            events.append((name, json.loads(line[5:])))
    return events


def _serve(tmp_path: Path, *extra: str) -> Iterator[Server]:
    port = free_port()
    release = tmp_path / "release"
    cmd = [sys.executable, "-m", "tests.web.parity_server", "--port", str(port)]
    cmd += ["--db", str(tmp_path / "chats.db"), "--release", str(release), *extra]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/healthz").status_code == 200
        except httpx.TransportError:
            return False

    wait_until_ready(proc, ready, "the parity server")
    server = Server(base, release)
    try:
        yield server
    finally:
        server.client.close()
        stop_web(proc)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    yield from _serve(tmp_path)


def _wait_live(server: Server, chat_id: str) -> None:
    for _ in range(600):
        runs = server.client.get("/api/runs").json()
        if any(r["session_id"] == chat_id for r in runs):
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"no live run in chat {chat_id}")


def test_tool_images_are_stubs_in_the_stream_and_the_detail_and_served_whole(
    server: Server,
) -> None:
    events = server.stream("snap it")
    chat_id = next(d for e, d in events if e == "session")["session_id"]
    result = next(d for e, d in events if e == "tool_result")
    assert result["images"] == [{"index": 0, "mime_type": "image/png"}]
    assert events[-1][0] == "done"
    entries = server.client.get(f"/api/sessions/{chat_id}").json()["entries"]
    tool_message = next(m for m in entries if m["role"] == "tool")
    assert tool_message["images"] == [{"index": 0, "mime_type": "image/png"}]
    call_id = result["id"]
    image = server.client.get(f"/api/sessions/{chat_id}/tool-images/{call_id}/0")
    assert image.status_code == 200
    assert image.headers["content-type"] == "image/png"
    assert image.content == b"\x89PNG-test-bytes"
    missing = server.client.get(f"/api/sessions/{chat_id}/tool-images/{call_id}/3")
    assert missing.status_code == 404


def test_agents_report_the_window_their_provider_knows(server: Server) -> None:
    (agent,) = server.client.get("/api/agents").json()
    assert agent["name"] == "assistant"
    assert agent["context_window"] == 32_000


def test_an_approval_decided_while_the_stream_waits_ends_it_with_the_resumed_answer(
    server: Server,
) -> None:
    """The agent (``lovia``) is served as ``assistant``: the resumed run starts under that."""
    found: list[tuple[str, Any]] = []

    def consume() -> None:
        found.extend(server.stream("gate it", "c-gate"))

    reader = threading.Thread(target=consume)
    reader.start()
    for _ in range(600):
        decided = server.client.post(
            "/api/chat/approve",
            json={"session_id": "c-gate", "call_id": "gate1", "decision": "approve"},
        )
        if decided.status_code == 200:
            break
        threading.Event().wait(0.05)
    assert decided.status_code == 200, decided.text
    reader.join(30)
    kinds = [e for e, _ in found]
    assert "approval_required" in kinds
    assert kinds[-1] == "done", found[-3:]
    assert found[-1][1]["output"] == "ack"


def test_a_second_blocking_turn_for_a_busy_chat_is_refused(server: Server) -> None:
    answers: list[httpx.Response] = []
    first = threading.Thread(
        target=lambda: answers.append(
            server.client.post("/api/chat", json={"message": "wait", "session_id": "c-busy"})
        )
    )
    first.start()
    _wait_live(server, "c-busy")
    again = server.client.post("/api/chat", json={"message": "hi", "session_id": "c-busy"})
    assert again.status_code == 409
    assert again.json()["detail"]["code"] == "run_active"
    server.release.touch()
    first.join(30)
    assert answers[0].status_code == 200, answers[0].text
    assert answers[0].json()["output"] == "ack"


def test_a_stop_frees_a_blocking_turn_that_waits_for_a_persons_answer(server: Server) -> None:
    answers: list[httpx.Response] = []
    turn = threading.Thread(
        target=lambda: answers.append(
            server.client.post("/api/chat", json={"message": "ask", "session_id": "c-ask"})
        )
    )
    turn.start()
    _wait_live(server, "c-ask")
    stopped = server.client.post("/api/chat/cancel", params={"session_id": "c-ask"})
    assert stopped.status_code == 200
    turn.join(30)
    assert answers[0].status_code == 409
    assert answers[0].json()["detail"]["code"] == "run_cancelled"


def test_export_lays_out_tool_calls_and_results_as_0_9_119(server: Server) -> None:
    events = server.stream("snap it")
    chat_id = next(d for e, d in events if e == "session")["session_id"]
    md = server.client.get(f"/api/sessions/{chat_id}/export?format=md").text
    assert "**Tool: `snap`**" in md
    assert "**Tool result: `snap`**" in md
    data = server.client.get(f"/api/sessions/{chat_id}/export?format=json").json()
    result = next(m for m in data["messages"] if m["role"] == "tool")
    assert result["is_error"] is False
    assert result["images"] == [{"index": 0, "mime_type": "image/png"}]


def test_a_compaction_notice_shows_where_its_run_ended(server: Server) -> None:
    entries = server.client.get("/api/sessions/compacted").json()["entries"]
    assert [e["role"] for e in entries] == ["user", "assistant", "context_compacted"]
    assert entries[-1]["compaction"]["tokens_before"] == 9000
    md = server.client.get("/api/sessions/compacted/export?format=md").text
    assert "context_compacted" not in md.lower()


def test_rewind_on_a_store_that_cannot_answers_501(tmp_path: Path) -> None:
    for server in _serve(tmp_path, "--no-rewind"):
        assert server.client.get("/api/info").json()["features"]["rewind"] is False
        chat_id = server.client.post("/api/chat", json={"message": "hi"}).json()["session_id"]
        refused = server.client.post(f"/api/sessions/{chat_id}/rewind", json={"user_turn": 0})
        assert refused.status_code == 501
        assert refused.json()["detail"]["code"] == "feature_unavailable"


def test_rewind_is_a_feature_of_the_built_in_stores(server: Server) -> None:
    assert server.client.get("/api/info").json()["features"]["rewind"] is True


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"messages": {"Japanese": {}}}, "invalid language tag"),
        ({"messages": {"ja": {"nav.chats": 1}}}, "must map message keys to strings"),
        ({"default_lang": "fr"}, "default_lang 'fr' has no strings"),
        ({"scripts": ["ext/table.js"]}, "names a file in assets"),
        ({"logo": "logo.svg"}, "names a file in assets"),
    ],
)
def test_chat_ui_refuses_what_the_page_could_not_use(options: dict[str, Any], match: str) -> None:
    with pytest.raises(UserError, match=match):
        ChatUI(**options)


def test_chat_ui_takes_paths_on_the_app_urls_and_known_languages() -> None:
    ChatUI(scripts=["/ext/table.js"], styles=["https://cdn.example.com/a.css"])
    ChatUI(default_lang="zh")
    ChatUI(messages={"pt-BR": {"nav.chats": "Conversas"}}, default_lang="pt-BR")
