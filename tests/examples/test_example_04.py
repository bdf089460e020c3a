"""examples/04_sessions.py remembers a fact across two processes (S2, S7)."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "04_sessions.py"


def test_the_second_process_remembers_what_the_first_was_told() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "agent: Your project is called Atlas.  (4 entries stored)" in done.stdout
    pids = set(re.findall(r"\[process (\d+)\]", done.stdout))
    assert len(pids) == 2, done.stdout  # two turns, two separate OS processes


def test_one_turn_on_a_fresh_file_knows_nothing(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "chat.db"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(db), "What is my project called?"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "You have not told me yet." in done.stdout
    assert db.exists()
