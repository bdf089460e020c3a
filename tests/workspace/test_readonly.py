"""A readonly workspace writes nothing by any route: its session, its tools, tools the model
is not offered, a custom tool, the shell and background processes (issue 29, security)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, RunContext, Runner, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.workspace import PermissionDeniedError, Workspace, WorkspaceError

from .conftest import tree_digest


async def test_the_session_refuses_every_write(root: Path, outside: Path) -> None:
    (root / "link").symlink_to(outside, target_is_directory=True)
    before, before_out = tree_digest(root), tree_digest(outside)
    ws = Workspace.local(str(root), mode="readonly", readable=(str(outside),))
    session = await ws.open()
    attempts: list[Any] = [
        session.write_text("notes.txt", "x"),
        session.write_text("new/file.txt", "x"),
        session.write_text("notes.txt", "x", create_only=True),
        session.edit_text("notes.txt", "hello", "bye"),
        session.write_text(str(outside / "secret.txt"), "x"),
        session.write_text("link/secret.txt", "x"),
        session.run("touch x"),
        session.run("echo x > notes.txt"),
        session.spawn("touch x"),
    ]
    for attempt in attempts:
        with pytest.raises(PermissionDeniedError):
            await attempt
    assert (await session.read_text(str(outside / "secret.txt"))).content == "TOP SECRET\n"
    await session.close()
    assert tree_digest(root) == before and tree_digest(outside) == before_out


async def test_a_readonly_agent_is_offered_no_writing_tool(root: Path) -> None:
    ws = Workspace.local(str(root), mode="readonly")
    assert [t.name for t in ws.tools()] == ["read_file", "view_image", "list_files", "grep_files"]
    assert ws.view_injectors() == []


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("write_file", {"path": "notes.txt", "content": "x"}),
        ("edit_file", {"path": "notes.txt", "old": "hello", "new": "x"}),
        ("shell", {"command": "touch x"}),
        ("shell", {"command": "sleep 1; touch x", "background": True}),
    ],
)
async def test_a_model_asking_for_a_write_gets_an_error(
    root: Path, name: str, args: dict[str, Any]
) -> None:
    before = tree_digest(root)
    model = ScriptedProvider([call(name, args), text("ok")])
    agent = Agent(name="r", model=model, workspace=Workspace.local(str(root), mode="readonly"))
    result = await Runner.run(agent, "change something")
    answer = next(m.content for m in result.messages if m.role == "tool")
    assert "not available" in answer or "denied" in answer
    assert tree_digest(root) == before


async def test_a_custom_tool_cannot_write_through_ctx_workspace(root: Path) -> None:
    before = tree_digest(root)

    @tool
    async def save(ctx: RunContext[Any], content: str) -> str:
        """Save a note."""
        assert ctx.workspace is not None
        try:
            await ctx.workspace.write_text("notes.txt", content)
        except WorkspaceError as exc:
            return f"refused: {exc.message}"
        return "saved"

    model = ScriptedProvider([call("save", {"content": "x"}), text("ok")])
    agent = Agent(
        name="r", model=model, tools=[save], workspace=Workspace.local(str(root), mode="readonly")
    )
    result = await Runner.run(agent, "save it")
    answer = next(m.content for m in result.messages if m.role == "tool")
    assert answer.startswith("refused:") and "denies writing" in answer
    assert tree_digest(root) == before
