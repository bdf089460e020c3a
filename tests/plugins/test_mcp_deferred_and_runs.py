"""Deferred MCP servers, and MCP tools inside real runs."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    InMemoryCheckpointer,
    Runner,
    ToolError,
    ToolResultEntry,
    UserError,
    tool,
)
from lovia.plugins.mcp import MCP
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import Tool
from lovia.transcript import ToolCallEntry

from .conftest import bare_context, stdio

needs_agent_plugins = pytest.mark.skipif(
    "plugins" not in {f.name for f in dataclasses.fields(Agent)},
    reason="Agent(plugins=...) is not wired into the run loop on this branch yet",
)


async def test_a_deferred_server_offers_search_and_call_instead_of_its_tools() -> None:
    instance = await MCP(stdio(defer=True), stdio(name="direct", include_tools=["pid"])).setup(
        bare_context()
    )
    try:
        tools = {t.name: t for t in instance.tools}
        assert set(tools) == {"direct__pid", "search_mcp_tools", "call_mcp_tool"}
        assert instance.instructions is not None
        assert "t__add" in instance.instructions and "t__delete_file" in instance.instructions
        assert "direct__pid" not in instance.instructions

        found = json.loads(
            await tools["search_mcp_tools"].invoke({"query": "add integers"}, bare_context())
        )
        assert found[0]["name"] == "t__add"
        assert found[0]["parameters"]["required"] == ["a", "b"]

        call_tool = tools["call_mcp_tool"]
        args = {"tool": "t__add", "arguments": {"a": 4, "b": 5}}
        assert await call_tool.invoke(args, bare_context()) == "9"
        with pytest.raises(ToolError) as unknown:
            await call_tool.invoke({"tool": "t__ad", "arguments": {}}, bare_context())
        assert "t__add" in (unknown.value.hint or "")
    finally:
        await instance.aclose()


async def test_a_deferred_call_keeps_its_tools_approval_and_resume_policy() -> None:
    instance = await MCP(stdio(defer=True)).setup(bare_context())
    try:
        call_tool = {t.name: t for t in instance.tools}["call_mcp_tool"]
        ctx = bare_context()
        destructive = {"tool": "t__delete_file", "arguments": {"path": "/tmp/x"}}
        assert call_tool.requires_approval(destructive, ctx) is True
        assert call_tool.requires_approval({"tool": "t__echo", "arguments": {}}, ctx) is False
        assert callable(call_tool.on_resume)
        in_doubt = ToolCallEntry(
            call_id="c1", name="call_mcp_tool", arguments=json.dumps(destructive)
        )
        assert await call_tool.on_resume(in_doubt, ctx) == "fail"
        harmless = ToolCallEntry(
            call_id="c2", name="call_mcp_tool", arguments=json.dumps({"tool": "t__echo"})
        )
        assert await call_tool.on_resume(harmless, ctx) == "rerun"
    finally:
        await instance.aclose()


def test_search_finds_nothing_politely() -> None:
    async def go() -> str:
        instance = await MCP(stdio(defer=True)).setup(bare_context())
        try:
            search = {t.name: t for t in instance.tools}["search_mcp_tools"]
            return str(await search.invoke({"query": "kubernetes"}, bare_context()))
        finally:
            await instance.aclose()

    assert "No deferred MCP tool matched" in asyncio.run(go())


@pytest.mark.parametrize("second_deferred", [True, False])
def test_a_deferred_name_clash_is_refused_in_0_9_119s_words(second_deferred: bool) -> None:
    # programs match 0.9.119's "deferred MCP tool name clash"
    servers = MCP(
        stdio(name=None, include_tools=["echo"], defer=True),
        stdio(name=None, include_tools=["echo"], defer=second_deferred),
    )
    with pytest.raises(UserError, match="deferred MCP tool name clash") as refused:
        asyncio.run(servers.setup(bare_context()))
    assert "'echo'" in str(refused.value) or ": echo" in str(refused.value)


@needs_agent_plugins
async def test_a_run_calls_an_mcp_tool_and_closes_the_server_when_it_ends() -> None:
    model = ScriptedProvider([call("t__add", {"a": 19, "b": 23}), call("t__pid", {}), text("42")])
    agent = Agent(name="calc", model=model, plugins=[MCP(stdio())])  # type: ignore[call-arg]
    result = await Runner.run(agent, "what is 19 + 23?")
    assert result.output == "42"
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outputs[0] == "42"
    assert {"t__add", "t__pid"} <= {spec["name"] for spec in model.tools[0]}
    pid = int(outputs[1])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


class OwnServer:
    """An ``MCPServerLike`` of the caller's own (MCP's docs: a config or a live connection
    satisfies it): ``open()`` gives an object with ``tools()`` and ``close()``."""

    close_after_run = True
    defer = False

    def __init__(self, *tools: Tool) -> None:
        self.listed = list(tools)
        self.opened = self.closed = 0

    async def open(self) -> OwnServer:
        self.opened += 1
        return self

    def tools(self) -> list[Tool]:
        return list(self.listed)

    async def close(self) -> None:
        self.closed += 1


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


async def test_a_server_of_the_callers_own_lends_its_tools_to_the_agent_a_handoff_reaches() -> None:
    # 0.9.119's MCPServerLike asks of a connection only tools() and close() (issue 29)
    server = OwnServer(ping)
    spanish = Agent(
        name="spanish",
        model=ScriptedProvider([call("ping", {}), text("pong recibido")]),
        plugins=[MCP(server)],  # type: ignore[arg-type]
    )
    english = Agent(
        name="english",
        model=ScriptedProvider([call("transfer_to_spanish", {})]),
        handoffs=[spanish],
    )
    result = await Runner.run(english, "hola")
    assert result.output == "pong recibido"
    assert [e.output for e in result.entries if isinstance(e, ToolResultEntry)][-1] == "pong"
    assert (server.opened, server.closed) == (1, 1)


async def test_a_deferred_server_of_the_callers_own_is_searched_by_its_tool_names() -> None:
    server = OwnServer(ping)
    server.defer = True
    instance = await MCP(server).setup(bare_context())  # type: ignore[arg-type]
    assert sorted(t.name for t in instance.tools) == ["call_mcp_tool", "search_mcp_tools"]
    assert instance.instructions is not None and "ping" in instance.instructions
    assert instance.aclose is not None
    await instance.aclose()
    assert server.closed == 1


@needs_agent_plugins
@pytest.mark.skipif(
    importlib.util.find_spec("lovia.approvals") is None,
    reason="tool approvals are not wired into the run loop on this branch yet",
)
async def test_a_destructive_mcp_tool_waits_for_approval_before_reaching_the_server(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    model = ScriptedProvider([call("t__delete_file", {"path": "/srv/data"}), text("deleted")])
    agent = Agent(  # type: ignore[call-arg]
        name="ops",
        model=model,
        plugins=[MCP(stdio(env={"LOG_CALLS": str(log)}))],
        approval_handler=lambda call, ctx: "defer",
    )
    with pytest.raises(ApprovalPending) as parked:
        await Runner.run(
            agent, "delete /srv/data", checkpoint=CheckpointOptions(InMemoryCheckpointer(), "r1")
        )
    assert [c.name for c in parked.value.calls] == ["t__delete_file"]
    assert not log.exists()  # the server never saw the call


CHILD = Path(__file__).with_name("mcp_run_child.py")


def run_child(tmp_path: Path, tool_name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), str(tmp_path / "app.db"), tool_name, str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_agent_plugins
@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_a_crash_during_a_destructive_mcp_call_stops_the_resume(tmp_path: Path) -> None:
    crashed = run_child(tmp_path, "t__pay_and_crash_client")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = run_child(tmp_path, "t__pay_and_crash_client")
    assert resumed.returncode == 0, resumed.stderr
    answer = json.loads(resumed.stdout)
    assert answer["error"] == "UserError"
    assert "call_1" in answer["message"]


@needs_agent_plugins
@pytest.mark.skipif(sys.platform == "win32", reason="needs SIGKILL")
def test_a_crash_during_a_read_only_mcp_call_runs_it_again_on_resume(tmp_path: Path) -> None:
    crashed = run_child(tmp_path, "t__read_and_crash_client")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    resumed = run_child(tmp_path, "t__read_and_crash_client")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"output": "done: ok"}
