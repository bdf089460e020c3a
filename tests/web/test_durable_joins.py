"""A message answered 200 while a run is live survives a crash (issue 27, part 2): four
messages join a run whose tool is running, the server is killed with SIGKILL, a new server
resumes the run, and each message is in the chat exactly once, in the order sent."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import httpx

from ..web_server import start_web, stop_web

LOVIA = Path(sys.executable).with_name("lovia")


def _serve(db: Path, nap: str) -> tuple[object, str]:
    env = {**os.environ, "LOVIA_TEST_NAP": nap}
    command = [str(LOVIA), "web", "--app", "tests.web.apps:listening", "--db", str(db)]
    return start_web(command, env=env)


def _events(response: httpx.Response, until: str) -> list[str]:
    seen: list[str] = []
    for line in response.iter_lines():
        if line.startswith("event:"):
            seen.append(line[6:].strip())
            if seen[-1] == until:
                break
    return seen


def test_joined_messages_survive_sigkill_mid_tool_exactly_once_in_order(tmp_path: Path) -> None:
    db = tmp_path / "lovia.db"
    proc, base = _serve(db, "600")  # the tool runs until the server is killed
    try:
        body = {"message": "first", "session_id": "c1"}
        with httpx.stream("POST", f"{base}/api/chat/stream", json=body, timeout=60) as first:
            assert first.status_code == 200
            assert "tool_call" in _events(first, "tool_call")
            for n in (1, 2):  # joined through the chat route (0.9.119's X-Lovia-Joined)
                joined = {"message": f"m{n}", "session_id": "c1"}
                with httpx.stream(
                    "POST", f"{base}/api/chat/stream", json=joined, timeout=60
                ) as sent:
                    assert sent.status_code == 200
                    assert sent.headers.get("x-lovia-joined") == "1"
            for n in (3, 4):  # and through /api/chat/inject
                pushed = {"message": f"m{n}", "session_id": "c1"}
                answer = httpx.post(f"{base}/api/chat/inject", json=pushed, timeout=60)
                assert answer.status_code == 200 and answer.json()["accepted"], answer.text
            proc.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
            proc.wait()  # type: ignore[attr-defined]
    finally:
        stop_web(proc)  # type: ignore[arg-type]
    proc, base = _serve(db, "0.01")
    try:
        resumed = httpx.stream(
            "POST", f"{base}/api/chat/reconnect", params={"session_id": "c1"}, timeout=60
        )
        with resumed as stream:
            assert stream.status_code == 200
            assert _events(stream, "done")[-1] == "done"
        chat = httpx.get(f"{base}/api/sessions/c1").json()
        users = [m["content"] for m in chat["entries"] if m["role"] == "user"]
        assert users == ["first", "m1", "m2", "m3", "m4"], json.dumps(chat["entries"])[:2000]
        assert chat["entries"][-1]["content"] == "heard: first | m1 | m2 | m3 | m4"
        assert chat["pending"] is None
    finally:
        stop_web(proc)  # type: ignore[arg-type]
