"""A file 0.9.119 filled with every kind of entry goes on here exactly as on 0.9.119.

``crossversion/write_rich_files.py``, run by 0.9.119, leaves ``rich.db``: sessions and
checkpoints holding images and reasoning, a tool error, non-ASCII text, an output 0.9.119
trimmed, a structured output, a system input and a rewind, runs stopped by ``max_turns`` and by
a budget, a rejected approval, tool arguments that are not a JSON object, a handoff and an agent
called as a tool. ``crossversion/read_rich_files.py`` reads all of it, goes on with every
session (recording what the model is sent), replays the completed runs, resumes the stopped
ones and reads the file again. Here it must print what 0.9.119 prints, and the read-only
commands must show the file without changing a byte of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .harness import ROOT
from .test_files_from_0_9_119 import FROZEN, read_frozen, written_then_read_on_both

LOVIA = str(Path(sys.executable).with_name("lovia"))
SESSIONS = ["s-img", "s-tools", "s-struct", "s-rewind", "s-ap", "s-weird", "s-hand"]
RUNS = ["r-img", "r-tools", "r-max", "r-bud", "r-ap", "r-weird", "r-hand"]


def _copy_frozen(tmp_path: Path) -> Path:
    work = tmp_path / "files"
    work.mkdir()
    shutil.copyfile(FROZEN / "rich.db", work / "rich.db")
    return work


def test_the_frozen_rich_file_reads_continues_replays_and_resumes_as_on_0_9_119(
    tmp_path: Path,
) -> None:
    read_frozen(tmp_path, ("rich.db",), "read_rich_files.py", "read_rich_on_0.9.119.json")


def test_a_rich_file_0_9_119_writes_now_goes_on_here_as_there(tmp_path: Path) -> None:
    written_then_read_on_both(tmp_path, "write_rich_files.py", "read_rich_files.py")


def _fingerprint(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_read_only_commands_show_the_rich_file_and_leave_it_byte_for_byte(
    tmp_path: Path,
) -> None:
    work = _copy_frozen(tmp_path)
    db = str(work / "rich.db")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    commands = [["sessions", "list"], ["sessions", "list", "--json"], ["runs", "list", "--json"]]
    commands += [["runs", "approvals"], ["sessions", "export", "s-tools"]]
    commands += [["sessions", "show", s, *j] for s in SESSIONS for j in ([], ["--json"])]
    commands += [["runs", "show", r, *j] for r in RUNS for j in ([], ["--json"])]
    before = _fingerprint(work)
    shown = {}
    for command in commands:
        done = subprocess.run(
            [LOVIA, *command, "--db", db],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, (command, done.stderr)
        assert _fingerprint(work) == before, command
        shown[" ".join(command)] = done.stdout
    listed = [s["session_id"] for s in json.loads(shown["sessions list --json"])]
    assert sorted(listed) == sorted(SESSIONS)
    runs = {r["run_id"]: r["status"] for r in json.loads(shown["runs list --json"])}
    assert runs["r-max"] == runs["r-bud"] == "interrupted"
    assert runs["r-img"] == runs["r-hand"] == "completed"
    img = json.loads(shown["sessions show s-img --json"])
    assert "thinking ü" in json.dumps(img, ensure_ascii=False)
    assert "https://example.com/a.png" in json.dumps(img)
    assert "recall_tool_result" in shown["sessions show s-tools"]  # 0.9.119's trim marker
