"""Shell metacharacters do not carry a command past the rules: every simple command a line
runs is judged, including those hidden in substitutions, groups, wrappers and ``sh -c``
strings, and the paths a line names are judged by the path rules (issue 29, security)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lovia.workspace import (
    CommandRule,
    LocalWorkspaceSession,
    PermissionDeniedError,
    WorkspacePolicy,
)

RM_NOTES = [
    "rm notes.txt",
    "echo hi; rm notes.txt",
    "echo hi && rm notes.txt",
    "false || rm notes.txt",
    "echo hi | rm notes.txt",
    "echo hi & rm notes.txt",
    "echo hi\nrm notes.txt",
    "echo $(rm notes.txt)",
    'echo "$(rm notes.txt)"',
    "echo `rm notes.txt`",
    "cat <(rm notes.txt)",
    "(rm notes.txt)",
    "{ rm notes.txt; }",
    "FOO=1 rm notes.txt",
    "/bin/rm notes.txt",
    "\\rm notes.txt",
    "r''m notes.txt",
    '"rm" notes.txt',
    "command rm notes.txt",
    "env -i rm notes.txt",
    "nohup rm notes.txt",
    "timeout 5 rm notes.txt",
    "nice -n 5 rm notes.txt",
    "xargs rm <<< notes.txt",
    "bash -c 'rm notes.txt'",
    "sh -ec 'echo ok; rm notes.txt'",
    "eval 'rm notes.txt'",
    "bash -c \"sh -c 'rm notes.txt'\"",
]


@pytest.mark.parametrize("command", RM_NOTES)
async def test_a_denied_command_cannot_hide_in_a_line(root: Path, command: str) -> None:
    policy = WorkspacePolicy.trusted(command_rules=(CommandRule("rm", "deny"),))
    async with LocalWorkspaceSession(root, policy=policy) as ws:
        assert ws.decide_command(command) == "deny"
        with pytest.raises(PermissionDeniedError, match="denied by workspace policy"):
            await ws.run(command)
        with pytest.raises(PermissionDeniedError):
            await ws.spawn(command)
    assert (root / "notes.txt").read_text() == "hello\n"


@pytest.mark.parametrize(
    "command",
    ["echo hi; touch x", "echo $(touch x)", "echo hi && curl example.com", "(echo a; ls)"],
)
def test_an_allow_rule_covers_only_its_own_command(root: Path, command: str) -> None:
    policy = WorkspacePolicy.coding(command_rules=(CommandRule("echo", "allow"),))
    session = LocalWorkspaceSession(root, policy=policy)
    assert session.decide_command(command) == "ask"


@pytest.mark.parametrize(
    "command",
    ["awk '{print $1}' notes.txt", 'python3 -c "print(1)"', "echo hi 2>&1", "echo ${HOME}"],
)
def test_braces_parentheses_and_redirections_stay_allowed(root: Path, command: str) -> None:
    policy = WorkspacePolicy.coding(
        command_rules=(
            CommandRule("echo", "allow"),
            CommandRule("awk", "allow"),
            CommandRule("python3", "allow"),
        )
    )
    assert LocalWorkspaceSession(root, policy=policy).decide_command(command) == "allow"


@pytest.mark.parametrize(
    "command",
    ["cat .env", "cp .env backup.txt", "echo x > .env", "echo x >> config/.env.local"],
)
async def test_a_command_naming_a_denied_path_is_denied(root: Path, command: str) -> None:
    (root / ".env").write_text("KEY=secret\n")
    policy = WorkspacePolicy.trusted(denied_paths=(".env*",))
    async with LocalWorkspaceSession(root, policy=policy) as ws:
        assert ws.decide_command(command) == "deny"
        with pytest.raises(PermissionDeniedError):
            await ws.run(command)
    assert (root / ".env").read_text() == "KEY=secret\n"


async def test_a_redirect_out_of_the_root_is_denied_under_coding(root: Path) -> None:
    policy = WorkspacePolicy.coding(command_rules=(CommandRule("echo", "allow"),))
    async with LocalWorkspaceSession(root, policy=policy) as ws:
        for command in ("echo x > ../evil.txt", "echo x > /tmp/../evil.txt", "echo x >> ~/evil"):
            assert ws.decide_command(command) == "deny", command
        assert ws.decide_command("echo x > inside.txt") == "allow"
        assert ws.decide_command("cat ../outside/secret.txt") == "ask"
    assert not (root.parent / "evil.txt").exists()


async def test_a_shell_string_is_checked_for_paths_too(root: Path) -> None:
    policy = WorkspacePolicy.trusted(denied_paths=(".env*",))
    async with LocalWorkspaceSession(root, policy=policy) as ws:
        assert ws.decide_command("bash -c 'cat .env'") == "deny"
        assert ws.decide_command('sh -c "echo x > .env"') == "deny"
