"""A hostile or broken MCP server never hangs a call (issue 37; the MCP attacks of issue 27).

Each test runs ``mcp_hostile.py``, a server that breaks the protocol on purpose, over stdio
and over streamable HTTP on 127.0.0.1. Every call ends with an answer or an error naming the
server and what it did; ``asyncio.wait_for(..., HANG)`` only guards against a hang.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, MCPError, Runner, ToolError, UserError
from lovia.plugins.mcp import MCP, MCPConnection, MCPServerStdio, MCPServerStreamableHTTP
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import run_tool

from .conftest import bare_context, hostile_stdio

HANG = 60  # seconds: a hang guard, far above what any of these calls takes


def hostile_http(url: str, **options: Any) -> MCPServerStreamableHTTP:
    return MCPServerStreamableHTTP(name="h", url=url, **options)


@asynccontextmanager
async def connected(transport: str, url: str, **options: Any) -> AsyncIterator[MCPConnection]:
    server = hostile_stdio(**options) if transport == "stdio" else hostile_http(url, **options)
    async with server.session() as conn:
        yield conn


async def invoke(conn: MCPConnection, name: str, **args: Any) -> Any:
    tool = {t.name: t for t in conn.tools()}[f"h__{name}"]
    return await asyncio.wait_for(run_tool(tool, args, bare_context()), HANG)


BOTH = pytest.mark.parametrize("transport", ["stdio", "http"])


# -- messages that cannot be read ---------------------------------------------------------------


@BOTH
@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("deep", "nested too deeply"),
        ("truncated", "ends in the middle"),
        ("wrong_id", "which no call is waiting for"),
    ],
)
async def test_an_unreadable_answer_fails_the_waiting_call_at_once(
    transport: str, hostile_url: str, tool: str, said: str
) -> None:
    async with connected(transport, hostile_url) as conn:
        with pytest.raises(MCPError) as failed:
            await invoke(conn, tool)
        # the connection goes on serving
        assert await invoke(conn, "ok") == "fine"
    message = failed.value.message
    assert "MCP server 'h'" in message
    assert "may or may not have taken effect" in message
    assert failed.value.tool_name == tool
    assert failed.value.in_doubt is True
    if transport == "stdio":  # the SDK's HTTP client says it in its own words
        assert said in message
        assert '{"jsonrpc":"2.0"' in message  # what the server sent, quoted
    else:
        assert "cannot be read" in message or said in message


async def test_a_lone_surrogate_over_stdio_is_replaced_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with connected("stdio", "") as conn:
        with caplog.at_level(logging.WARNING, logger="lovia.mcp"):
            assert await invoke(conn, "surrogate") == "cut \ufffd here"
    assert "lone surrogate" in caplog.text


@pytest.mark.parametrize("tool", ["surrogate", "bad_bytes"])
async def test_broken_text_over_http_fails_the_call_as_unreadable(
    hostile_url: str, tool: str
) -> None:
    async with connected("http", hostile_url) as conn:
        with pytest.raises(MCPError, match="cannot be read"):
            await invoke(conn, tool)
        assert await invoke(conn, "ok") == "fine"


async def test_bytes_that_are_not_utf8_are_replaced_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="lovia.mcp"):
        async with connected("stdio", "") as conn:
            assert await invoke(conn, "bad_bytes") == "caf\ufffd \ufffd!"
            assert await invoke(conn, "ok") == "fine"
    assert "not UTF-8" in caplog.text and "U+FFFD" in caplog.text


async def test_bad_bytes_in_the_handshake_do_not_break_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="lovia.mcp"):
        async with connected("stdio", "", env={"HOSTILE_HANDSHAKE_BYTES": "1"}) as conn:
            assert await invoke(conn, "ok") == "fine"
    assert "not UTF-8" in caplog.text


async def test_lines_that_are_not_mcp_before_the_handshake_are_skipped_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="lovia.mcp"):
        async with connected("stdio", "", env={"HOSTILE_BANNER": "1"}) as conn:
            assert await invoke(conn, "ok") == "fine"
    assert "Welcome to the hostile server" in caplog.text


async def test_a_program_that_writes_but_never_speaks_mcp_is_named_for_what_it_wrote() -> None:
    script = "import sys, time; print('Usage: tool [--help]'); sys.stdout.flush(); time.sleep(60)"
    server = MCPServerStdio(command=sys.executable, args=["-c", script], connect_timeout=2)
    with pytest.raises(MCPError) as failed:
        await asyncio.wait_for(server.open(), HANG)
    assert "Usage: tool [--help]" in failed.value.message
    assert "shell or a CLI" not in (failed.value.hint or "")
    assert "stderr" in (failed.value.hint or "")


async def test_a_program_that_prints_and_exits_is_named_for_what_it_wrote() -> None:
    script = "print('Usage: tool [--help]'); raise SystemExit(2)"
    server = MCPServerStdio(command=sys.executable, args=["-c", script])
    with pytest.raises(MCPError) as failed:
        await asyncio.wait_for(server.open(), HANG)
    assert "could not connect" in failed.value.message
    assert "Usage: tool [--help]" in failed.value.message
    assert "stderr" in (failed.value.hint or "")


# -- deadlines ----------------------------------------------------------------------------------


@BOTH
@pytest.mark.parametrize("tool", ["silent", "keepalive"])
async def test_a_call_never_answered_ends_at_call_timeout_and_says_it_may_have_taken_effect(
    transport: str, hostile_url: str, tool: str
) -> None:
    async with connected(transport, hostile_url, call_timeout=1) as conn:
        with pytest.raises(MCPError) as failed:
            await invoke(conn, tool)
        assert await invoke(conn, "ok") == "fine"
    assert "did not answer the call to" in failed.value.message
    assert "may still have taken effect" in failed.value.message
    assert "call_timeout" in (failed.value.hint or "")
    assert failed.value.in_doubt is True


def test_calls_have_a_deadline_by_default_and_none_turns_it_off() -> None:
    assert hostile_stdio().call_timeout == 120.0
    assert hostile_stdio(call_timeout=None).call_timeout is None
    with pytest.raises(UserError, match="call_timeout must be positive"):
        hostile_stdio(call_timeout=0)


async def test_the_model_reads_that_a_timed_out_call_may_have_taken_effect() -> None:
    agent = Agent(
        "a",
        model=ScriptedProvider([call("h__silent", {}), text("noted")]),
        plugins=[MCP(hostile_stdio(call_timeout=1))],
    )
    result = await asyncio.wait_for(Runner.run(agent, "go"), HANG)
    tool_result = result.entries[2]
    assert tool_result.is_error
    assert "may still have taken effect" in tool_result.output
    assert "check whether it took effect" in tool_result.output


async def test_a_timed_out_destructive_call_is_never_repeated_but_a_safe_one_is(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    server = hostile_stdio(env={"HOSTILE_LOG": str(log)}, call_timeout=0.5, retries=2)
    async with server.session() as conn:
        tools = {t.name: t for t in conn.tools()}
        assert tools["h__charge_and_hang"].on_resume == "fail"
        with pytest.raises(MCPError, match="may still have taken effect"):
            await asyncio.wait_for(run_tool(tools["h__charge_and_hang"], {}, bare_context()), HANG)
        with pytest.raises(MCPError, match="may still have taken effect"):
            await asyncio.wait_for(run_tool(tools["h__silent"], {}, bare_context()), HANG)
    assert log.read_text().splitlines() == ["charge_and_hang"] + ["silent"] * 3


# -- size ---------------------------------------------------------------------------------------


async def test_a_huge_stdio_answer_is_cut_at_max_result_bytes_in_bounded_memory() -> None:
    size = 40_000_000
    async with connected("stdio", "", max_result_bytes=1_000_000) as conn:
        tracemalloc.start()
        try:
            value = await invoke(conn, "huge", size=size)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert await invoke(conn, "ok") == "fine"
    assert isinstance(value, str)
    assert value.startswith("xxxx")
    assert "[the server's answer was cut: it was 38.1 MiB" in value
    assert len(value) < 1_000_200  # the first 1,000,000 bytes and the note
    assert peak < 20_000_000  # the answer is 40 MB: it was never held whole


async def test_a_huge_http_json_answer_is_an_error_found_while_it_streams(
    hostile_url: str,
) -> None:
    async with connected("http", hostile_url, max_result_bytes=1_000_000) as conn:
        with pytest.raises(MCPError) as failed:
            await invoke(conn, "huge", size=5_000_000)
        assert await invoke(conn, "ok") == "fine"
    assert "longer than max_result_bytes" in failed.value.message


async def test_a_huge_http_event_is_an_error(hostile_url: str) -> None:
    async with connected("http", hostile_url, max_result_bytes=1_000_000) as conn:
        with pytest.raises(MCPError) as failed:
            await invoke(conn, "huge_sse", size=5_000_000)
        assert await invoke(conn, "ok") == "fine"
    assert "MCP server 'h'" in failed.value.message


# -- what held before, kept ---------------------------------------------------------------------


@BOTH
async def test_a_tool_gone_between_listing_and_calling_is_an_error_the_model_sees(
    transport: str, hostile_url: str
) -> None:
    server = hostile_stdio() if transport == "stdio" else hostile_http(hostile_url)
    agent = Agent(
        "a",
        model=ScriptedProvider([call("h__vanished", {}), text("it is gone")]),
        plugins=[MCP(server)],
    )
    result = await asyncio.wait_for(Runner.run(agent, "go"), HANG)
    assert result.output == "it is gone"
    assert result.entries[2].is_error
    assert "Unknown tool" in result.entries[2].output


@BOTH
async def test_a_flood_of_notifications_stays_flat_in_memory(
    transport: str, hostile_url: str
) -> None:
    async with connected(transport, hostile_url) as conn:
        tracemalloc.start()
        try:
            assert await invoke(conn, "flood", size=2_000) == "after the flood"  # 20 MB
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 5_000_000


async def test_a_server_that_dies_mid_call_ends_the_call_and_keeps_the_resume_policy(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    async with hostile_stdio(env={"HOSTILE_LOG": str(log)}).session() as conn:
        with pytest.raises((MCPError, ToolError), match="went away"):
            await invoke(conn, "die")
    # not marked destructive: called again once on a new server, which dies again
    assert log.read_text().splitlines() == ["die", "die"]


# -- orphans ------------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def _wait(condition: Callable[[], bool], seconds: float = HANG) -> bool:
    """Poll ``condition`` until it holds (True) or ``seconds`` pass (False): a hang guard."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal")
def test_a_stdio_server_ends_when_its_lovia_process_is_killed(tmp_path: Path) -> None:
    pidfile, log = tmp_path / "server.pid", tmp_path / "calls.log"
    child = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("mcp_hang_child.py")),
            str(pidfile),
            str(log),
        ],
        stderr=subprocess.PIPE,
    )
    try:
        # the call reached the server, which now holds it for ever
        assert _wait(lambda: log.exists() and "silent" in log.read_text()), "no call arrived"
        server_pid = int(pidfile.read_text())
        assert _alive(server_pid)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=HANG) == -signal.SIGKILL
        assert _wait(lambda: not _alive(server_pid)), f"server {server_pid} outlived lovia"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stderr is not None
        child.stderr.close()
