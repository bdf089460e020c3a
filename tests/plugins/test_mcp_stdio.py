"""The MCP plugin against a real MCP server started over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from lovia import ImagePart, MCPError, TextPart, ToolError
from lovia.plugins import Plugin
from lovia.plugins.mcp import MCP, MCPServerStdio, MCPToolResult
from lovia.tools import Tool, run_tool

from .conftest import bare_context, stdio


def by_name(tools: list[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): read its state where /proc exists
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


async def test_the_plugin_lists_the_servers_tools_with_prefix_and_schema() -> None:
    plugin = MCP(stdio(name="files"))
    assert isinstance(plugin, Plugin)
    instance = await plugin.setup(bare_context())
    try:
        tools = by_name(instance.tools)
        assert "files__add" in tools and "files__echo" in tools
        add = tools["files__add"]
        assert add.description == "Add two integers."
        assert add.parameters["type"] == "object"
        assert add.parameters["required"] == ["a", "b"]
        assert set(add.parameters["properties"]) == {"a", "b"}
        assert instance.instructions is None
    finally:
        await instance.aclose()


async def test_tool_calls_reach_the_server_and_return_its_text() -> None:
    async with stdio().session() as conn:
        tools = by_name(conn.tools())
        ctx = bare_context()
        assert await tools["t__add"].invoke({"a": 2, "b": 40}, ctx) == "42"
        assert await tools["t__echo"].invoke({"text": "héllo"}, ctx) == "héllo"


async def test_an_image_in_a_result_becomes_an_image_part() -> None:
    async with stdio().session() as conn:
        value = await by_name(conn.tools())["t__snapshot"].invoke(
            {"caption": "dot"}, bare_context()
        )
    assert isinstance(value, list)
    caption, image = value
    assert caption == TextPart("dot")
    assert isinstance(image, ImagePart)
    assert image.mime_type == "image/png" and image.data and image.data.startswith("iVBOR")


async def test_an_error_result_becomes_a_tool_error_with_the_servers_message() -> None:
    async with stdio().session() as conn:
        with pytest.raises(ToolError, match="no such account"):
            await by_name(conn.tools())["t__fail"].invoke(
                {"reason": "no such account"}, bare_context()
            )


async def test_a_result_renderer_receives_the_raw_result() -> None:
    seen: list[MCPToolResult] = []

    def render(result: MCPToolResult, ctx: object) -> str:
        seen.append(result)
        return f"error={result.is_error} blocks={len(result.content)}"

    async with stdio(result_renderer=render).session() as conn:
        tools = by_name(conn.tools())
        assert (
            await tools["t__fail"].invoke({"reason": "x"}, bare_context()) == "error=True blocks=1"
        )
        assert (
            await tools["t__add"].invoke({"a": 1, "b": 1}, bare_context()) == "error=False blocks=1"
        )
    assert seen[1].structured_content == {"result": 2}
    assert str(seen[1]) == "2"


async def test_include_and_exclude_pick_tools_by_their_mcp_names() -> None:
    async with stdio(include_tools=["echo", "add", "pid"], exclude_tools=["pid"]).session() as conn:
        assert sorted(t.name for t in conn.tools()) == ["t__add", "t__echo"]


async def test_a_dotted_tool_name_is_made_valid_and_still_calls_the_server_tool() -> None:
    async with stdio(name=None).session() as conn:
        tools = by_name(conn.tools())
        assert "files.read" not in tools
        assert (
            await tools["files_read"].invoke({"path": "a.txt"}, bare_context())
            == "contents of a.txt"
        )


async def test_annotations_set_approval_and_resume_policy() -> None:
    async with stdio().session() as conn:
        tools = by_name(conn.tools())
    # destructive and not idempotent: approval, and never silently re-run on resume
    assert tools["t__delete_file"].needs_approval is True
    assert tools["t__delete_file"].on_resume == "fail"
    # destructive but idempotent: approval, and safe to run again
    assert tools["t__set_flag"].needs_approval is True
    assert tools["t__set_flag"].on_resume == "rerun"
    # read-only, and unannotated tools keep the defaults
    for name in ("t__echo", "t__add"):
        assert tools[name].needs_approval is False
        assert tools[name].on_resume == "rerun"


async def test_explicit_settings_override_the_annotations() -> None:
    async with stdio(needs_approval=False, on_resume="fail").session() as conn:
        tools = by_name(conn.tools())
    assert tools["t__delete_file"].needs_approval is False
    assert tools["t__echo"].on_resume == "fail"


async def test_each_run_gets_its_own_server_process_which_ends_with_the_run() -> None:
    plugin = MCP(stdio())
    first = await plugin.setup(bare_context())
    second = await plugin.setup(bare_context())
    pid_1 = int(await by_name(first.tools)["t__pid"].invoke({}, bare_context()))
    pid_2 = int(await by_name(second.tools)["t__pid"].invoke({}, bare_context()))
    assert pid_1 != pid_2
    await first.aclose()
    assert not process_alive(pid_1)
    assert process_alive(pid_2)
    await second.aclose()
    assert not process_alive(pid_2)


async def test_a_kept_alive_connection_serves_many_runs_and_stays_open() -> None:
    async with stdio().session() as conn:
        plugin = MCP(conn)
        counts = []
        for _ in range(3):
            instance = await plugin.setup(bare_context())
            counts.append(await by_name(instance.tools)["t__count"].invoke({}, bare_context()))
            await instance.aclose()  # the run ends; the connection is not the run's to close
        assert counts == ["1", "2", "3"]
    with pytest.raises(MCPError) as closed:
        conn.tools()
    assert "session()" in (closed.value.hint or "")


async def test_concurrent_calls_share_one_connection() -> None:
    async with stdio().session() as conn:
        echo = by_name(conn.tools())["t__echo"]
        answers = await asyncio.gather(
            *(echo.invoke({"text": str(i)}, bare_context()) for i in range(8))
        )
    assert answers == [str(i) for i in range(8)]


async def test_a_connection_can_be_closed_from_another_task() -> None:
    conn = await stdio().open()
    pid = int(await by_name(conn.tools())["t__pid"].invoke({}, bare_context()))
    await asyncio.create_task(conn.close())
    assert not process_alive(pid)


async def test_a_read_only_call_is_repeated_once_on_a_new_server_when_the_server_dies(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "died"
    async with stdio().session() as conn:
        tools = by_name(conn.tools())
        answer = await tools["t__die_once"].invoke({"marker": str(marker)}, bare_context())
        first_pid = int(marker.read_text())
        assert answer.startswith("survived in ")
        assert int(answer.split()[-1]) != first_pid
        assert await tools["t__echo"].invoke({"text": "still here"}, bare_context()) == "still here"


async def test_a_destructive_call_is_not_repeated_when_the_server_dies(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with stdio(env={"LOG_CALLS": str(log)}).session() as conn:
        tools = by_name(conn.tools())
        with pytest.raises(MCPError) as lost:
            await tools["t__charge_and_die"].invoke({"cents": 500}, bare_context())
        assert "may or may not have taken effect" in lost.value.message
        assert lost.value.in_doubt is True
        assert lost.value.tool_name == "charge_and_die"
        assert lost.value.hint
        # the connection was reopened for the calls that follow
        assert await tools["t__echo"].invoke({"text": "ok"}, bare_context()) == "ok"
    assert log.read_text().splitlines() == ["charge_and_die", "echo"]


async def test_retries_never_repeat_a_destructive_call_whose_server_died(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with stdio(env={"LOG_CALLS": str(log)}, retries=3).session() as conn:
        tools = by_name(conn.tools())
        with pytest.raises(MCPError, match="may or may not"):
            await run_tool(tools["t__charge_and_die"], {"cents": 1}, bare_context())
        # ...but a call the server answered as failed is tried again, as asked
        with pytest.raises(ToolError, match="declined"):
            await run_tool(tools["t__refund"], {"cents": 2}, bare_context())
    assert log.read_text().splitlines() == ["charge_and_die"] + ["refund"] * 4


async def test_a_call_that_always_kills_the_server_fails_after_one_retry(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with stdio(env={"LOG_CALLS": str(log)}).session() as conn:
        with pytest.raises(MCPError, match="went away again"):
            await by_name(conn.tools())["t__die"].invoke({}, bare_context())
    assert log.read_text().splitlines() == ["die", "die"]


async def test_without_auto_reconnect_a_dead_server_is_reported_and_not_called_again(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    async with stdio(env={"LOG_CALLS": str(log)}, auto_reconnect=False).session() as conn:
        with pytest.raises(MCPError) as lost:
            await by_name(conn.tools())["t__die_once"].invoke(
                {"marker": str(tmp_path / "m")}, bare_context()
            )
    assert "auto_reconnect" in (lost.value.hint or "")
    assert log.read_text().splitlines() == ["die_once"]


async def test_a_tool_timeout_cancels_the_call_and_the_connection_still_works() -> None:
    async with stdio(timeout=0.5).session() as conn:
        tools = by_name(conn.tools())
        with pytest.raises(ToolError, match="timed out"):
            await run_tool(tools["t__slow"], {"seconds": 30}, bare_context())
        assert await tools["t__echo"].invoke({"text": "after"}, bare_context()) == "after"


async def test_a_missing_command_is_an_mcp_error_with_a_hint() -> None:
    with pytest.raises(MCPError) as failed:
        await MCPServerStdio(command="lovia-no-such-mcp-server").open()
    assert "lovia-no-such-mcp-server" in failed.value.message
    assert "PATH" in (failed.value.hint or "")


async def test_a_server_that_exits_at_start_is_an_mcp_error() -> None:
    server = MCPServerStdio(command=sys.executable, args=["-c", "import sys; sys.exit(2)"])
    with pytest.raises(MCPError, match="could not connect"):
        await server.open()


async def test_a_program_that_never_answers_the_handshake_times_out() -> None:
    server = MCPServerStdio(
        command=sys.executable, args=["-c", "import time; time.sleep(60)"], connect_timeout=1
    )
    with pytest.raises(MCPError, match="handshake") as failed:
        await server.open()
    assert "connect_timeout" in (failed.value.hint or "")


async def test_a_failing_server_closes_the_ones_opened_before_it() -> None:
    good = stdio(name="good")
    plugin = MCP(good, MCPServerStdio(command="lovia-no-such-mcp-server"))
    before = {p.pid for p in _children()}
    with pytest.raises(MCPError):
        await plugin.setup(bare_context())
    assert {p.pid for p in _children()} - before == set()


def _children() -> list[os.DirEntry[str]]:
    """This process's live child processes (from /proc)."""
    me = str(os.getpid())
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            found.append(entry)
    return found


def test_bad_settings_are_user_errors_with_hints() -> None:
    from lovia import UserError

    with pytest.raises(UserError, match="list"):
        MCPServerStdio(command="x", args="--port 3")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="http"):
        from lovia.plugins.mcp import MCPServerStreamableHTTP

        MCPServerStreamableHTTP(url="127.0.0.1:9/mcp")
    with pytest.raises(UserError):
        MCP()


async def test_call_tool_calls_by_mcp_name_and_never_repeats_a_lost_call(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    async with stdio(env={"LOG_CALLS": str(log)}).session() as conn:
        result = await conn.call_tool("add", {"a": 1, "b": 1})
        assert isinstance(result, MCPToolResult)
        assert (result.is_error, result.structured_content, str(result)) == (
            False,
            {"result": 2},
            "2",
        )
        with pytest.raises(MCPError, match="not called again"):
            await conn.call_tool("die", {})
        assert str(await conn.call_tool("files.read", {"path": "x"})) == "contents of x"
    assert log.read_text().splitlines() == ["add", "die", "files.read"]


def test_an_mcp_sdk_older_than_2_3_is_named_when_a_server_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0.9.119 also ran on the SDK 1.18+; this lovia needs 2.3 (its mcp_types package), and
    # says so instead of failing inside a call
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("")  # an SDK without mcp_types
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_types"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp_types", None)  # not installed
    from lovia import UserError

    with pytest.raises(UserError, match=r"SDK 2\.3") as refused:
        asyncio.run(MCP(MCPServerStdio(command="unused")).setup(bare_context()))
    assert "pip install -U 'lovia[mcp]'" in str(refused.value)
