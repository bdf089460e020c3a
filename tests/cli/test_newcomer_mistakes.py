"""The mistakes of a first hour with the real ``lovia`` command: each one is told in a line or
two that say what was wrong and what to do, with no traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..web_server import interrupt

LOVIA = str(Path(sys.executable).with_name("lovia"))
SRC = Path(__file__).resolve().parents[2] / "src"
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LOVIA_MODEL", "LOVIA_DB", "OPENAI_BASE_URL")


def _env(home: Path, **extra: str) -> dict[str, str]:
    """No model, no key and no database chosen; ``HOME`` in the test's folder."""
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    # the checkout's own package, also when the test run put a relative src on the path
    path = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    return {**env, "HOME": str(home), "PYTHONPATH": path, **extra}


def lovia(*args: str, cwd: Path, stdin: str = "", **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LOVIA, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(cwd, **extra),
    )


def started(cwd: Path, *args: str, **extra: str) -> subprocess.Popen[str]:
    """``lovia *args`` running in ``cwd``, its three streams piped (text)."""
    return subprocess.Popen(
        [LOVIA, *args],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(cwd, **extra),
    )


def test_a_mistyped_option_is_refused_by_its_command_naming_the_likely_one(
    tmp_path: Path,
) -> None:
    done = lovia("web", "--dmeo", cwd=tmp_path)
    assert done.returncode == 2
    assert "usage: lovia web" in done.stderr  # the command's usage, not the top one
    assert "unrecognized arguments: --dmeo (did you mean --demo?)" in done.stderr
    pruned = lovia("runs", "prune", "--dry-rn", cwd=tmp_path)
    assert pruned.returncode == 2 and "did you mean --dry-run?" in pruned.stderr
    stray = lovia("sessions", "show", "s1", "extra", cwd=tmp_path)
    assert stray.returncode == 2 and "unrecognized arguments: extra" in stray.stderr
    assert "did you mean" not in stray.stderr
    for done in (pruned, stray):
        assert "Traceback" not in done.stderr
    assert not (tmp_path / ".lovia").exists()  # refused before anything was opened


def test_plain_lovia_shows_its_commands_and_how_to_start(tmp_path: Path) -> None:
    done = lovia(cwd=tmp_path)
    assert done.returncode == 0  # the overview, as 0.9.119 prints it
    for word in ("web", "chat", "sessions", "runs", "lovia web --demo"):
        assert word in done.stdout


def test_store_commands_read_the_database_lovia_web_was_given_in_lovia_db(
    tmp_path: Path,
) -> None:
    db = tmp_path / "elsewhere" / "chats.db"
    chat = lovia(
        "chat",
        "--demo",
        "--session",
        "s1",
        cwd=tmp_path,
        stdin="calculate 1 + 1\n",
        LOVIA_DB=str(db),
    )
    assert chat.returncode == 0, chat.stderr
    assert db.exists() and not (tmp_path / ".lovia").exists()
    listed = lovia("sessions", "list", cwd=tmp_path, LOVIA_DB=str(db))
    assert listed.returncode == 0, listed.stderr
    assert "s1" in listed.stdout
    assert "LOVIA_DB" in lovia("sessions", "list", "--help", cwd=tmp_path).stdout


def test_ctrl_c_at_the_chat_prompt_ends_the_chat(tmp_path: Path) -> None:
    proc = started(tmp_path, "chat", "--demo", "--db", str(tmp_path / "c.db"), "--session", "s1")
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("lovia chat: agent demo, session s1")
    proc.send_signal(signal.SIGINT)  # nothing is running: the prompt is waiting
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "bye (session s1 is stored in" in out
    assert "Traceback" not in err


@pytest.mark.parametrize("pause", [0.0, 0.002, 0.05, 0.3])
def test_ctrl_c_right_after_the_banner_stops_lovia_web(tmp_path: Path, pause: float) -> None:
    """The banner comes out while the server is still loading: a Ctrl-C then must stop it
    (a KeyboardInterrupt raised inside an import can be swallowed, and the server ran on)."""
    proc = started(tmp_path, "web", "--demo", "--port", "0", "--db", str(tmp_path / "w.db"))
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("lovia web: open http://127.0.0.1:")
    time.sleep(pause)
    _, err = interrupt(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "never awaited" not in err, err


def test_lovia_web_says_at_start_that_its_model_cannot_answer(tmp_path: Path) -> None:
    db = str(tmp_path / "w.db")
    proc = started(tmp_path, "web", "--port", "0", "--db", db, LOVIA_MODEL="openai:gpt-4.1")
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(5)]
    finally:
        interrupt(proc)
    assert lines[2].strip() == "lovia web: agent lovia", lines
    assert "agent lovia cannot answer: no API key" in lines[3], lines
    assert lines[4].startswith("lovia web: hint: set OPENAI_API_KEY"), lines


def test_no_model_names_the_settings_of_lovia_0_9_119_it_does_not_read(tmp_path: Path) -> None:
    plain = lovia("chat", "--db", "c.db", cwd=tmp_path)
    assert plain.returncode == 2 and "LOVIA_MODEL" in plain.stderr
    assert "config.json" not in plain.stderr
    (tmp_path / ".lovia").mkdir()
    (tmp_path / ".lovia" / "config.json").write_text("{}", encoding="utf-8")
    done = lovia("chat", "--db", "c.db", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "lovia 0.9.119's model settings in .lovia/config.json are not read" in done.stderr


def test_chat_refuses_a_database_it_cannot_use_before_its_first_prompt(tmp_path: Path) -> None:
    """A folder given as --db: said once, exit 2, instead of a chat whose every message fails
    and a goodbye that claims the session is stored there."""
    done = lovia("chat", "--demo", "--db", str(tmp_path), cwd=tmp_path, stdin="hi\n")
    assert done.returncode == 2
    assert f"lovia: error: cannot read '{tmp_path}'" in done.stderr
    assert "lovia: hint:" in done.stderr and "Traceback" not in done.stderr
    assert "you>" not in done.stdout and "bye" not in done.stdout
