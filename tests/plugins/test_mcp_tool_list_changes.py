"""A server that announces a new tool list (``notifications/tools/list_changed``): a kept-alive
connection lists its tools again before the next run, so that run can call the new tool."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

from lovia import Agent, Runner
from lovia.plugins.mcp import MCP, MCPConnection, MCPServerStreamableHTTP
from lovia.testing import ScriptedProvider, call, text

from .conftest import bare_context, stdio

StartHttp = Callable[..., tuple[str, "subprocess.Popen[bytes]"]]


async def unlock_then_use_the_new_tool(conn: MCPConnection, prefix: str) -> list[str]:
    """Run 1 calls ``unlock`` (which adds ``secret``); run 2 calls ``secret``."""
    first = Agent(
        "a",
        model=ScriptedProvider([call(f"{prefix}__unlock", {}), text("unlocked")]),
        plugins=[MCP(conn)],
    )
    unlocked = await Runner.run(first, "unlock it")
    second = Agent(
        "a",
        model=ScriptedProvider([call(f"{prefix}__secret", {}), text("done")]),
        plugins=[MCP(conn)],
    )
    used = await Runner.run(second, "use the new tool")
    return [unlocked.entries[2].output, used.entries[2].output]


async def test_the_next_run_on_a_kept_alive_stdio_connection_sees_the_new_tool() -> None:
    async with stdio().session() as conn:
        assert "t__secret" not in {t.name for t in conn.tools()}
        outputs = await unlock_then_use_the_new_tool(conn, "t")
        assert "t__secret" in {t.name for t in conn.tools()}
    assert outputs == ["unlocked", "the secret is 42"]


async def test_the_next_run_on_a_kept_alive_http_connection_sees_the_new_tool(
    start_http: StartHttp,
) -> None:
    url, _ = start_http()  # a server of its own: the new tool must not leak into other tests
    async with MCPServerStreamableHTTP(name="web", url=url).session() as conn:
        outputs = await unlock_then_use_the_new_tool(conn, "web")
    assert outputs == ["unlocked", "the secret is 42"]


async def test_refresh_tools_lists_them_again_on_request() -> None:
    async with stdio().session() as conn:
        unlock = {t.name: t for t in conn.tools()}["t__unlock"]
        assert await unlock.invoke({}, bare_context()) == "unlocked"
        assert "t__secret" in {t.name for t in await conn.refresh_tools()}
