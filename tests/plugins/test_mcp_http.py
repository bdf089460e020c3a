"""The MCP plugin against a real streamable-HTTP MCP server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from lovia import ImagePart, MCPError, ToolError
from lovia.plugins.mcp import MCP, MCPServerStreamableHTTP

from .conftest import bare_context, free_port

StartHttp = Callable[..., tuple[str, "subprocess.Popen[bytes]"]]


async def test_tools_are_listed_and_called_over_http(http_url: str) -> None:
    instance = await MCP(MCPServerStreamableHTTP(name="web", url=http_url)).setup(bare_context())
    try:
        tools = {t.name: t for t in instance.tools}
        assert tools["web__add"].parameters["required"] == ["a", "b"]
        assert await tools["web__add"].invoke({"a": 20, "b": 22}, bare_context()) == "42"
        caption, image = await tools["web__snapshot"].invoke({}, bare_context())
        assert caption.text == "a pixel"
        assert isinstance(image, ImagePart) and image.mime_type == "image/png"
        with pytest.raises(ToolError, match="refused"):
            await tools["web__fail"].invoke({"reason": "refused"}, bare_context())
        assert tools["web__delete_file"].needs_approval is True
        assert tools["web__delete_file"].on_resume == "fail"
    finally:
        await instance.aclose()


async def test_headers_are_sent_and_a_kept_alive_connection_serves_many_runs(http_url: str) -> None:
    server = MCPServerStreamableHTTP(url=http_url, headers={"X-Trace": "1"})
    async with server.session() as conn:
        plugin = MCP(conn)
        pids = set()
        for _ in range(2):
            instance = await plugin.setup(bare_context())
            pids.add(await {t.name: t for t in instance.tools}["pid"].invoke({}, bare_context()))
            await instance.aclose()
        assert len(pids) == 1
        header = {t.name: t for t in conn.tools()}["header"]
        assert await header.invoke({"name": "X-Trace"}, bare_context()) == "1"
        assert {t.name for t in conn.tools()} >= {"echo", "add"}


async def test_nothing_listening_is_an_mcp_error_with_a_hint() -> None:
    server = MCPServerStreamableHTTP(url=f"http://127.0.0.1:{free_port()}/mcp", connect_timeout=20)
    with pytest.raises(MCPError) as failed:
        await server.open()
    assert "could not connect" in failed.value.message
    assert "reachable" in (failed.value.hint or "")


async def test_a_server_that_dies_mid_call_is_an_mcp_error(
    start_http: StartHttp, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    url, proc = start_http(env={**os.environ, "LOG_CALLS": str(log)})
    async with MCPServerStreamableHTTP(url=url, connect_timeout=10).session() as conn:
        tools = {t.name: t for t in conn.tools()}
        with pytest.raises(MCPError) as lost:
            await tools["charge_and_die"].invoke({"cents": 5}, bare_context())
        assert proc.wait(timeout=30) == 3
        assert lost.value.tool_name == "charge_and_die"
        assert lost.value.hint
        # the server is gone for good: the next call says so instead of hanging
        with pytest.raises(MCPError, match="reconnecting failed"):
            await tools["echo"].invoke({"text": "anyone?"}, bare_context())
    assert log.read_text().splitlines() == ["charge_and_die"]
