"""Real MCP servers for the plugin tests: ``mcp_server.py`` over stdio, or over streamable
HTTP on 127.0.0.1 in a subprocess."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from lovia import CancelToken, RunContext
from lovia.plugins.mcp import MCPServerStdio

from ..web_server import free_port, stop_web, wait_until_ready

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


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _start_http(env: dict[str, str] | None = None) -> tuple[str, subprocess.Popen[bytes]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER_SCRIPT, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    wait_until_ready(proc, lambda: _listening(port), "the MCP HTTP server")
    return f"http://127.0.0.1:{port}/mcp", proc


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """A streamable-HTTP MCP server shared by a module's tests (none of them kill it)."""
    url, proc = _start_http()
    try:
        yield url
    finally:
        stop_web(proc)


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
        stop_web(proc)


HOSTILE_SCRIPT = str(Path(__file__).with_name("mcp_hostile.py"))


def hostile_stdio(env: dict[str, str] | None = None, **options: Any) -> MCPServerStdio:
    """The misbehaving server (``mcp_hostile.py``) over stdio."""
    return MCPServerStdio(
        name="h", command=sys.executable, args=[HOSTILE_SCRIPT, "stdio"], env=env, **options
    )


@pytest.fixture(scope="module")
def hostile_url() -> Iterator[str]:
    """The misbehaving server over streamable HTTP, shared by a module's tests."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, HOSTILE_SCRIPT, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until_ready(proc, lambda: _listening(port), "the hostile MCP HTTP server")
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_web(proc)
