"""Real MCP servers for the plugin tests: ``mcp_server.py`` over stdio, or over streamable
HTTP on 127.0.0.1 in a subprocess."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from lovia import CancelToken, RunContext
from lovia.plugins.mcp import MCPServerStdio

SERVER_SCRIPT = str(Path(__file__).with_name("mcp_server.py"))


def stdio(
    name: str | None = "t", env: dict[str, str] | None = None, **options: Any
) -> MCPServerStdio:
    return MCPServerStdio(
        name=name, command=sys.executable, args=[SERVER_SCRIPT, "stdio"], env=env, **options
    )


def bare_context() -> RunContext[None]:
    """The context a tool receives, for calling tools outside a run."""
    return RunContext(
        deps=None, run_id="r-test", session_id=None, cancel_token=CancelToken(), state=None
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(300):  # up to ~30 s for the interpreter and uvicorn to start
        if proc.poll() is not None:
            raise RuntimeError(f"the MCP HTTP server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the MCP HTTP server did not start listening")


def _start_http(env: dict[str, str] | None = None) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER_SCRIPT, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        _wait_until_listening(port, proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return f"http://127.0.0.1:{port}/mcp", proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """A streamable-HTTP MCP server shared by a module's tests (none of them kill it)."""
    url, proc = _start_http()
    try:
        yield url
    finally:
        _stop(proc)


@pytest.fixture
def start_http() -> Iterator[Callable[..., tuple[str, subprocess.Popen[bytes]]]]:
    """Start a private HTTP server (for tests that kill it); stopped after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(env: dict[str, str] | None = None) -> tuple[str, subprocess.Popen[bytes]]:
        url, proc = _start_http(env)
        started.append(proc)
        return url, proc

    yield start
    for proc in started:
        _stop(proc)
