"""A lovia process for the orphan test: one run whose only tool call never returns, on the
misbehaving MCP server over stdio (which writes its pid to PIDFILE and each call to LOG).

    python mcp_hang_child.py PIDFILE LOG
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from lovia import Agent, Runner
from lovia.plugins.mcp import MCP, MCPServerStdio
from lovia.testing import ScriptedProvider, call, text

PIDFILE, LOG = sys.argv[1:3]
SERVER = str(Path(__file__).with_name("mcp_hostile.py"))


async def main() -> None:
    server = MCPServerStdio(
        name="h",
        command=sys.executable,
        args=[SERVER, "stdio"],
        env={"HOSTILE_PIDFILE": PIDFILE, "HOSTILE_LOG": LOG},
        call_timeout=None,  # waits for ever: only the kill ends this process
    )
    agent = Agent(  # type: ignore[call-arg]
        name="worker",
        model=ScriptedProvider([call("h__silent", {}), text("never")]),
        plugins=[MCP(server)],
    )
    await Runner.run(agent, "go")


asyncio.run(main())
