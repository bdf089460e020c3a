"""Agent(workspace=...) in runs: the tools and the prompt section, ctx.workspace for custom
tools, one session per run that closes (killing its processes) however the run ends, and a
caller's bound session kept across runs (issue 29)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, CancelToken, RunCancelled, RunContext, Runner, events, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.workspace import CommandRule, Workspace, WorkspaceLimits

from .conftest import assert_stopped, heartbeat_command, wait_for_beat


async def test_the_agent_gets_the_tools_and_a_workspace_section(root: Path) -> None:
    model = ScriptedProvider([call("read_file", {"path": "notes.txt"}), text("it says hello")])
    agent = Agent(
        name="coder",
        instructions="Be careful.",
        model=model,
        workspace=Workspace.local(str(root), mode="coding"),
    )
    result = await Runner.run(agent, "what is in notes.txt?")
    offered = {spec["function"]["name"] for spec in model.tools[0]}
    assert offered == {
        "read_file",
        "list_files",
        "grep_files",
        "write_file",
        "edit_file",
        "shell",
        "read_process_output",
        "kill_process",
        "recall_tool_result",  # the context policy's, as with any tools (0.9.119 too)
    }  # view_image only for a model that can see images
    system = model.calls[0][0].content
    assert system.startswith("Be careful.") and "## Workspace" in system
    assert "notes.txt (lines 1-1 of 1)\nhello" in result.messages[-2].content


async def test_a_custom_tool_uses_the_run_session(root: Path) -> None:
    seen: list[Any] = []

    @tool
    async def count_lines(ctx: RunContext[Any], path: str) -> int:
        """Count a file's lines."""
        assert ctx.workspace is not None
        seen.append(ctx.workspace)
        return (await ctx.workspace.read_text(path)).total_lines

    model = ScriptedProvider([call("count_lines", {"path": "notes.txt"}), text("one line")])
    agent = Agent(name="a", model=model, tools=[count_lines], workspace=Workspace.local(str(root)))
    result = await Runner.run(agent, "count")
    assert result.messages[-2].content == "1"
    assert seen[0].closed  # the run's own session, closed with the run


async def test_a_background_process_dies_when_its_run_ends(root: Path) -> None:
    beat = root / "beat"

    @tool
    async def until_it_beats() -> str:
        """Wait for the process to start."""
        await wait_for_beat(beat)
        return "it runs"

    start = {"command": heartbeat_command(beat), "background": True}
    model = ScriptedProvider([call("shell", start), call("until_it_beats", {}), text("ok")])
    agent = Agent(
        name="a",
        model=model,
        tools=[until_it_beats],
        workspace=Workspace.local(str(root), mode="trusted"),
    )
    result = await Runner.run(agent, "start it")
    await assert_stopped(beat)
    reminder = [m.content for m in model.calls[2] if "Background processes:" in str(m.content)]
    assert len(reminder) == 1 and "running" in reminder[0]
    assert not any("Background processes:" in str(e) for e in result.entries)  # never stored


async def test_a_cancelled_run_kills_the_processes_it_started(root: Path) -> None:
    beat = root / "beat"
    token = CancelToken()

    @tool
    async def wait_a_while() -> str:
        """Wait."""
        await wait_for_beat(beat)
        token.cancel()
        await asyncio.sleep(30)
        return "done"

    model = ScriptedProvider(
        [
            call("shell", {"command": heartbeat_command(beat), "background": True}),
            call("wait_a_while", {}),
            text("never"),
        ]
    )
    agent = Agent(
        name="a",
        model=model,
        tools=[wait_a_while],
        workspace=Workspace.local(str(root), mode="trusted"),
    )
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(Runner.run(agent, "go", cancel_token=token), 60)
    await assert_stopped(beat)


async def test_a_bound_session_outlives_runs_until_its_owner_closes_it(root: Path) -> None:
    beat = root / "beat"
    async with Workspace.local(str(root), mode="trusted").session() as bound:
        model = ScriptedProvider(
            [call("shell", {"command": heartbeat_command(beat), "background": True}), text("ok")]
        )
        await Runner.run(Agent(name="a", model=model, workspace=bound), "start")
        await wait_for_beat(beat)
        size = beat.stat().st_size
        await asyncio.sleep(0.4)
        assert beat.stat().st_size > size  # still running between runs
        session = await bound.open()
        assert [p.status for p in session.background_processes()] == ["running"]
    await assert_stopped(beat)


async def test_an_ask_command_waits_for_an_approval(root: Path) -> None:
    model = ScriptedProvider([call("shell", {"command": "touch made.txt"}), text("done")])
    ws = Workspace.local(str(root), mode="coding", command_rules=(CommandRule("ls", "allow"),))
    handle = Runner.stream(Agent(name="a", model=model, workspace=ws), "make it")
    asked = []
    async for ev in handle:
        if isinstance(ev, events.ApprovalRequired):
            asked.append(ev.call.name)
            assert not (root / "made.txt").exists()
            ev.approve()
    await handle.result()
    assert asked == ["shell"] and (root / "made.txt").exists()


async def test_a_handoff_moves_ctx_workspace_to_the_new_agent(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "who.txt").write_text("A\n")
    (b / "who.txt").write_text("B\n")
    second = Agent(
        name="second",
        model=ScriptedProvider([call("read_file", {"path": "who.txt"}), text("done")]),
        workspace=Workspace.local(str(b)),
    )
    first = Agent(
        name="first",
        model=ScriptedProvider([call("transfer_to_second", {})]),
        workspace=Workspace.local(str(a)),
        handoffs=[second],
    )
    result = await Runner.run(first, "who?")
    tool_texts = [m.content for m in result.messages if m.role == "tool"]
    assert any("B" in t for t in tool_texts) and not any("\nA" in t for t in tool_texts)


def test_something_else_as_workspace_is_refused_when_the_agent_is_built() -> None:
    from lovia import UserError

    with pytest.raises(UserError, match=r"Workspace\.local"):
        Agent(name="a", workspace="./project")  # type: ignore[arg-type]


async def test_a_cut_command_output_names_the_whole_outputs_size(root: Path) -> None:
    # 0.9.119's notice gives the size of everything the command wrote, so the model knows
    # how much it did not see (here the capture had kept only a part of it)
    model = ScriptedProvider([call("shell", {"command": "seq 1 20000"}), text("done")])
    workspace = Workspace.local(
        str(root), mode="trusted", limits=WorkspaceLimits(max_shell_output_chars=300)
    )
    result = await Runner.run(Agent(name="a", model=model, workspace=workspace), "count")
    output = next(e.output for e in result.entries if e.type == "tool_result")
    written = sum(len(f"{n}\n") for n in range(1, 20001))
    assert f"showing 300 of {written} chars" in output
    assert output.rstrip().endswith("20000")
