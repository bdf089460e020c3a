"""The key travels without code: MCP requests carry it in ``_meta``, the built-in HTTP tools
as ``Idempotency-Key`` (issue 32)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from lovia import Agent, Runner, UserError, tool
from lovia.testing import ScriptedProvider, batch, text
from lovia.tools import web_fetch

PLUGINS = Path(__file__).parents[1] / "plugins"
ROOT = Path(__file__).parents[2]


def mcp_child(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOG_CALLS": str(tmp / "calls.log"), "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [
            sys.executable,
            str(PLUGINS / "mcp_run_child.py"),
            str(tmp / "app.db"),
            "t__pay_with_key",
            str(tmp / "marker"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_an_idempotent_mcp_server_sees_the_same_key_when_a_call_in_doubt_runs_again(
    tmp_path: Path,
) -> None:
    crashed = mcp_child(tmp_path, "idempotent")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = mcp_child(tmp_path, "idempotent")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"output": "done: ok"}
    calls = (tmp_path / "calls.log").read_text().splitlines()
    keys = [line.split(" ", 1)[1] for line in calls if line.startswith("pay_with_key")]
    assert len(keys) == 2 and keys[0] == keys[1] and len(keys[0]) == 32


@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_without_idempotent_the_destructive_call_in_doubt_is_still_refused(tmp_path: Path) -> None:
    crashed = mcp_child(tmp_path)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = mcp_child(tmp_path)
    answer = json.loads(resumed.stdout)
    assert answer["error"] == "UserError" and "call_1" in answer["message"]
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert len([c for c in calls if c.startswith("pay_with_key")]) == 1


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Idempotency-Key"))
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[str]:
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def test_web_fetch_sends_each_calls_key_as_idempotency_key(site: str) -> None:
    fetch = web_fetch()
    script = ScriptedProvider(
        [
            batch(("web_fetch", {"url": site + "/a"}), ("web_fetch", {"url": site + "/b"})),
            text("ok"),
        ]
    )
    await Runner.run(Agent("a", model=script, tools=[fetch]), "go")
    keys = _Recorder.seen
    assert len(keys) == 2 and all(k is not None and len(k) == 32 for k in keys)
    assert keys[0] != keys[1]


def test_idempotent_and_a_contrary_on_resume_are_refused() -> None:
    with pytest.raises(UserError) as caught:

        @tool(idempotent=True, on_resume="fail")
        def pay(cents: int) -> str:
            return "ok"

    assert caught.value.hint
