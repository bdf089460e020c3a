"""Two rules every agent's plugins follow: a name is an identity (no two alike), and a
broken view injector costs its reminder, never the run."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from lovia import Agent, RunContext, Runner, UserError
from lovia.plugins import PluginInstance
from lovia.testing import ScriptedProvider, text
from lovia.transcript import InputEntry


class Reminder:
    def __init__(self, name: str, *injectors: Any) -> None:
        self.name = name
        self.injectors = list(injectors)
        self.setups = 0

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        self.setups += 1
        return PluginInstance(view_injectors=list(self.injectors))


def note(marker: str) -> Any:
    def inject(ctx: RunContext[Any]) -> list[InputEntry]:
        return [InputEntry(role="user", content=marker)]

    return inject


async def test_two_plugins_with_one_name_are_refused_before_any_setup() -> None:
    first, second = Reminder("notes"), Reminder("notes")
    model = ScriptedProvider([text("hi")])
    agent = Agent(name="a", model=model, plugins=[first, second])
    with pytest.raises(UserError, match="Duplicate plugin name 'notes'") as info:
        await Runner.run(agent, "go")
    assert info.value.hint
    assert (first.setups, second.setups) == (0, 0)
    assert model.calls == []


async def test_a_raising_injector_is_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken(ctx: RunContext[Any]) -> list[InputEntry]:
        raise RuntimeError("injector blew up")

    async def broken_async(ctx: RunContext[Any]) -> list[InputEntry]:
        raise ValueError("async injector blew up")

    model = ScriptedProvider([text("hi")])
    agent = Agent(
        name="a",
        model=model,
        plugins=[Reminder("bad", broken, note("KEEP-1")), Reminder("also", broken_async)],
    )
    with caplog.at_level(logging.WARNING, logger="lovia.plugins"):
        result = await Runner.run(agent, "go")
    assert result.output == "hi"
    assert any(m.content == "KEEP-1" for m in model.calls[0])  # its sibling still injects
    failures = [r for r in caplog.records if "view injector" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info for r in failures)


async def test_tools_are_offered_in_0_9_119s_order(tmp_path: Any) -> None:
    # the agent's own, the plugins' (in order), the workspace's, the handoffs', then the
    # context policy's: scripts and tests written for 0.9.119 compare this list
    from lovia import Skills, Todo, tool
    from lovia.workspace import Workspace

    @tool
    def mine(x: str) -> str:
        """Mine."""
        return x

    skill = tmp_path / "skills" / "s" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: s\ndescription: A skill.\n---\nBody.\n")
    (tmp_path / "ws").mkdir()
    model = ScriptedProvider([text("ok")])
    agent = Agent(
        name="a",
        model=model,
        tools=[mine],
        plugins=[Todo(), Skills(str(tmp_path / "skills"))],
        handoffs=[Agent(name="other", model=ScriptedProvider([]))],
        workspace=Workspace.local(str(tmp_path / "ws"), mode="readonly"),
    )
    await Runner.run(agent, "go")
    offered = [t["function"]["name"] for t in model.tools[0]]
    assert offered == [
        "mine",
        "todo_write",
        "load_skill",
        "read_skill_file",
        "read_file",
        "list_files",
        "grep_files",
        "transfer_to_other",
        "recall_tool_result",
    ]
