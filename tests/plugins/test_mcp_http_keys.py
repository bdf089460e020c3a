"""A real MCP server over streamable HTTP sees the same idempotency key in the request's
``_meta`` when a call runs again after its client was SIGKILLed mid-call (issue 32)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CHILD = Path(__file__).with_name("mcp_run_child.py")


def _child(tmp: Path) -> list[str]:
    return [
        sys.executable,
        str(CHILD),
        str(tmp / "app.db"),
        "t__pay_with_key_and_wait",
        str(tmp / "marker"),
        "idempotent",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_an_http_mcp_server_sees_the_same_key_when_the_call_runs_again(
    tmp_path: Path, start_http: Callable[..., tuple[str, subprocess.Popen[bytes]]]
) -> None:
    log = tmp_path / "calls.log"
    url, _ = start_http({**os.environ, "LOG_CALLS": str(log)})
    env = {**os.environ, "MCP_URL": url, "PYTHONPATH": str(ROOT / "src")}
    first = subprocess.Popen(
        _child(tmp_path), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(1200):  # until the server has the call (at most 120 s)
            if log.exists() and "pay_with_key" in log.read_text():
                break
            assert first.poll() is None, "the client ended before its call reached the server"
            time.sleep(0.1)
        first.send_signal(signal.SIGKILL)  # the client dies with its call in flight
    finally:
        first.kill()
        first.wait()
    resumed = subprocess.run(_child(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"output": "done: ok"}
    keys = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert len(keys) == 2 and keys[0] == keys[1] and len(keys[0]) == 32, keys
