"""A server that announces a new tool list (``notifications/tools/list_changed``): a kept-alive
connection lists its tools again before the next run, so that run can call the new tool."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable

from lovia import Agent, Runner
from lovia.plugins.mcp import MCP, MCPConnection, MCPServerStreamableHTTP
from lovia.testing import ScriptedProvider, call, text

from .conftest import bare_context, stdio
from .test_mcp_stdio import process_alive

StartHttp = Callable[..., tuple[str, "subprocess.Popen[bytes]"]]


async def unlock_then_use_the_new_tool(conn: MCPConnection, prefix: str) -> list[str]:
    """Run 1 calls ``unlock`` (which adds ``secret``); run 2 calls ``secret``."""
    first = Agent(
        "a",
        model=ScriptedProvider([call(f"{prefix}__unlock", {}), text("unlocked")]),
        plugins=[MCP(conn)],
    )
    unlocked = await Runner.run(first, "unlock it")
    await asyncio.wait_for(announced(conn, f"{prefix}__secret"), timeout=30)
    second = Agent(
        "a",
        model=ScriptedProvider([call(f"{prefix}__secret", {}), text("done")]),
        plugins=[MCP(conn)],
    )
    used = await Runner.run(second, "use the new tool")
    return [unlocked.entries[2].output, used.entries[2].output]


async def announced(conn: MCPConnection, name: str) -> None:
    """Until the connection has heard of ``name``. Over stdio the announcement comes before
    the call's answer; over HTTP the server may send it on its event stream a little later,
    so a run that starts in between still has the old list."""
    while name not in {t.name for t in await conn.current_tools()}:  # noqa: ASYNC110
        await asyncio.sleep(0.05)


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


async def test_a_server_that_died_after_announcing_a_change_is_reopened_for_the_next_run() -> None:
    async with stdio().session() as conn:
        tools = {t.name: t for t in conn.tools()}
        first_pid = int(await tools["t__pid"].invoke({}, bare_context()))
        assert await tools["t__unlock"].invoke({}, bare_context()) == "unlocked"
        os.kill(first_pid, signal.SIGKILL)
        while process_alive(first_pid):  # noqa: ASYNC110 - no event tells a process ended
            await asyncio.sleep(0.05)

        agent = Agent(
            "a", model=ScriptedProvider([call("t__pid", {}), text("done")]), plugins=[MCP(conn)]
        )
        result = await Runner.run(agent, "which process?")

    assert result.output == "done"
    assert int(result.entries[2].output) != first_pid  # a new server process answered
