"""A worker process for the MCP crash tests: one checkpointed run whose agent has the test
MCP server as a plugin. The model calls TOOL once, then answers with the tool's result.

    python mcp_run_child.py DB TOOL MARKER [idempotent]

With MCP_URL set, the server is the one at that URL (streamable HTTP), not a child on stdio.

Prints ``{"output": ...}`` or ``{"error": type, "message": ...}`` as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from lovia import Agent, CheckpointOptions, LoviaError, Runner, SQLiteCheckpointer
from lovia.plugins.mcp import MCP, MCPServer, MCPServerStdio, MCPServerStreamableHTTP
from lovia.testing import ScriptedProvider, ScriptedTurn, call, text

DB, TOOL, MARKER = sys.argv[1:4]
SERVER = str(Path(__file__).with_name("mcp_server.py"))


def model(messages: list[dict[str, Any]]) -> ScriptedTurn:
    results = [m.content for m in messages if m.role == "tool"]
    if not results:
        return call(TOOL, {"marker": MARKER}, call_id="call_1")
    return text(f"done: {results[-1]}")


async def main() -> None:
    idempotent = sys.argv[4:] == ["idempotent"]  # the server honours the call's key
    server: MCPServer
    if os.environ.get("MCP_URL"):
        server = MCPServerStreamableHTTP(
            name="t", url=os.environ["MCP_URL"], needs_approval=False, idempotent=idempotent
        )
    else:
        server = MCPServerStdio(
            name="t",
            command=sys.executable,
            args=[SERVER, "stdio"],
            env={"LOG_CALLS": os.environ["LOG_CALLS"]} if "LOG_CALLS" in os.environ else None,
            needs_approval=False,
            idempotent=idempotent,
        )
    agent = Agent(  # type: ignore[call-arg]
        name="worker", model=ScriptedProvider([model] * 3), plugins=[MCP(server)]
    )
    async with SQLiteCheckpointer(DB) as cp:
        try:
            result = await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "job-1"))
        except LoviaError as exc:
            print(json.dumps({"error": type(exc).__name__, "message": exc.message}))
            return
    print(json.dumps({"output": result.output}))


asyncio.run(main())
