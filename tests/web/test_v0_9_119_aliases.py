"""The routes a lovia 0.9.119 API client or probe uses, on a real ``lovia web``: ``GET /healthz``
and ``POST /api/chat`` (one blocking turn), under the same token and origin checks as the
rest of the API."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ..web_server import interrupt

LOVIA = str(Path(sys.executable).with_name("lovia"))
APP = """
from lovia import Agent
from lovia.testing import ScriptedProvider, text

agent = Agent(name="helper", instructions="x",
              model=ScriptedProvider([text("Paris."), text("Rome.")]))
"""


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    (tmp_path / "webapp.py").write_text(APP)
    procs: list[subprocess.Popen[str]] = []

    def go(*args: str, **env_vars: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOVIA_")}
        env.update(env_vars, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
        proc = subprocess.Popen(
            [LOVIA, "web", "--app", "webapp:agent", "--port", "0", "--db", "w.db", *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        procs.append(proc)
        assert proc.stdout is not None
        url = proc.stdout.readline().split("open ")[1].split("?")[0].strip().rstrip("/")
        for _ in range(300):
            try:
                httpx.get(f"{url}/healthz")
                return url
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.1)
        raise AssertionError("the server did not answer")

    yield go
    for proc in procs:
        interrupt(proc)


def test_a_blocking_turn_answers_and_lands_in_the_chat(start: Any) -> None:
    url = start()
    first = httpx.post(f"{url}/api/chat", json={"message": "Capital of France?"}, timeout=30)
    assert first.status_code == 200, first.text
    body = first.json()
    assert (
        body["output"] == "Paris." and body["usage"]["total_tokens"] == 2
    )  # the script counts one token in, one out
    chat = body["session_id"]
    again = httpx.post(
        f"{url}/api/chat", json={"message": "And Italy?", "session_id": chat}, timeout=30
    )
    assert again.json()["output"] == "Rome." and again.json()["session_id"] == chat
    shown = httpx.get(f"{url}/api/sessions/{chat}").json()
    assert [m["content"] for m in shown["entries"]] == [
        "Capital of France?",
        "Paris.",
        "And Italy?",
        "Rome.",
    ]
    assert [c["id"] for c in httpx.get(f"{url}/api/sessions").json()] == [chat]
    failed = httpx.post(f"{url}/api/chat", json={"message": "more?"}, timeout=30)
    assert failed.status_code == 500  # the script ran out
    assert failed.json()["detail"]["code"] == "run_failed" and failed.json()["detail"]["message"]
    [last, *_] = httpx.get(f"{url}/api/runs/history").json()
    assert last["status"] == "failed" and last["error"]


def test_a_blocking_turn_is_checked_like_every_other_route(start: Any) -> None:
    url = start()
    evil = httpx.post(
        f"{url}/api/chat", json={"message": "hi"}, headers={"Origin": "http://evil.example"}
    )
    assert evil.status_code == 403
    bad = httpx.post(f"{url}/api/chat", json={"message": "  ", "extra": 1})
    assert bad.status_code == 422
    guarded = start(LOVIA_WEB_TOKEN="t0k3n")
    assert httpx.post(f"{guarded}/api/chat", json={"message": "hi"}).status_code == 401
    assert httpx.get(f"{guarded}/healthz").json() == {"status": "ok"}
    ok = httpx.post(
        f"{guarded}/api/chat",
        json={"message": "hi"},
        headers={"Authorization": "Bearer t0k3n"},
        timeout=30,
    )
    assert ok.status_code == 200 and ok.json()["output"] == "Paris."
