"""Calls of lovia 0.9.119's command line that must answer here as they did there: what a
differential run of both CLIs on the same inputs found different (issue 30)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LOVIA = str(Path(sys.executable).with_name("lovia"))


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOVIA_", "OPENAI_"))}
    env.update(extra)
    return env


def run(
    *cmd: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(cmd), cwd=cwd, capture_output=True, text=True, timeout=60, env=env or clean_env()
    )


@pytest.mark.parametrize("option", ["--no-such-option", "-x"])
def test_an_unknown_option_before_any_command_is_an_error(option: str, tmp_path: Path) -> None:
    """0.9.119: ``lovia --bogus`` is an unknown command, exit status 2, nothing on stdout."""
    done = run(LOVIA, option, cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    assert option in done.stderr
    helped = run(LOVIA, "--help", option, cwd=tmp_path)  # the help still ignores what follows
    assert helped.returncode == 0 and helped.stdout.startswith("usage: lovia")


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_critical_is_a_log_level(how: str, tmp_path: Path) -> None:
    """0.9.119 took debug, info, warning, error and critical, in any case."""
    if how == "flag":
        done = run(LOVIA, "web", "--demo", "--check", "--log-level", "CRITICAL", cwd=tmp_path)
    else:
        env = clean_env(LOVIA_LOG_LEVEL="critical")
        done = run(LOVIA, "web", "--demo", "--check", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "demo: ok" in done.stdout


def test_python_m_lovia_cli_is_the_lovia_command(tmp_path: Path) -> None:
    """0.9.119's ``lovia.cli`` ran as a module: ``python -m lovia.cli web ...``."""
    done = run(sys.executable, "-m", "lovia.cli", "web", "--demo", "--check", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "demo: ok" in done.stdout
    bad = run(sys.executable, "-m", "lovia.cli", "no-such-command", cwd=tmp_path)
    assert bad.returncode == 2 and "no-such-command" in bad.stderr


def test_init_ui_into_a_file_is_exit_status_one_and_leaves_it(tmp_path: Path) -> None:
    """0.9.119's ``init-ui`` exits 1 when files are in the way, a file named as the folder
    too; the file stays as it was."""
    (tmp_path / "ui").write_text("mine")
    done = run(LOVIA, "web", "init-ui", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "'ui' is a file" in done.stderr
    assert (tmp_path / "ui").read_text() == "mine"
