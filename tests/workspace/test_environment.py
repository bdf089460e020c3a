"""Host secrets stay out of commands unless passed on purpose (issue 29, security)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lovia import Agent, Runner
from lovia.testing import ScriptedProvider, call, text
from lovia.workspace import LocalWorkspaceSession, Workspace, WorkspacePolicy

SECRETS = {
    "OPENAI_API_KEY": "sk-openai-leak",
    "ANTHROPIC_API_KEY": "sk-ant-leak",
    "AWS_SECRET_ACCESS_KEY": "aws-leak",
    "GITHUB_TOKEN": "ghp-leak",
    "HTTPS_PROXY": "http://user:pass@proxy-leak",
    "DATABASE_URL": "postgresql://u:pw-leak@db/x",
}


@pytest.fixture
def host_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)


async def _drained(ws: LocalWorkspaceSession, process_id: str) -> str:
    text_out = ""
    for _ in range(400):
        got = await ws.read_process_output(process_id)
        text_out += got.output
        if got.status != "running":
            return text_out
        await asyncio.sleep(0.05)
    raise AssertionError("the process did not end")


@pytest.mark.usefixtures("host_secrets")
async def test_commands_see_no_host_secrets(root: Path) -> None:
    async with LocalWorkspaceSession(root, policy=WorkspacePolicy.trusted()) as ws:
        shown = (await ws.run("env")).stdout
        started = await ws.spawn("env")
        background = await _drained(ws, started.process_id)
    for value in SECRETS.values():
        assert value not in shown
        assert value not in background
    assert "PATH=" in shown and "PATH=" in background  # commands still find programs


@pytest.mark.usefixtures("host_secrets")
async def test_a_secret_passes_only_when_given(root: Path) -> None:
    policy = WorkspacePolicy.trusted()
    async with LocalWorkspaceSession(root, policy=policy, env={"GITHUB_TOKEN": "given"}) as ws:
        out = (await ws.run("env", env={"OPENAI_API_KEY": "per-call"})).stdout
    assert "GITHUB_TOKEN=given" in out and "OPENAI_API_KEY=per-call" in out
    assert "sk-ant-leak" not in out and "aws-leak" not in out
    async with LocalWorkspaceSession(root, policy=policy, inherit_env=True) as ws:
        assert "aws-leak" in (await ws.run("env")).stdout


@pytest.mark.usefixtures("host_secrets")
async def test_a_model_running_env_reads_no_keys(root: Path) -> None:
    model = ScriptedProvider([call("shell", {"command": "env"}), text("done")])
    agent = Agent(name="a", model=model, workspace=Workspace.local(str(root), mode="trusted"))
    result = await Runner.run(agent, "what is in your environment?")
    shown = next(m.content for m in result.messages if m.role == "tool")
    assert "PATH=" in shown
    for value in SECRETS.values():
        assert value not in shown


async def test_commands_keep_the_terminal_type_and_locale(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 0.9.119's minimal environment passes TERM (programs such as tput, less and git read it)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    ws = Workspace.local(str(root), mode="trusted")
    async with ws.session() as held:
        session = await held.open()
        shown = (await session.run("env")).stdout.splitlines()
    assert "TERM=xterm-256color" in shown and "LC_ALL=C.UTF-8" in shown
