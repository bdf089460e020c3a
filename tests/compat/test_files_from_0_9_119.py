"""SQLite files written by lovia 0.9.119 open here with nothing lost (issue 12).

``crossversion/write_files.py``, run by 0.9.119, leaves a session file and a checkpoint file (a
completed and an interrupted run); ``crossversion/read_files.py`` reads the conversation, replays
the completed run and resumes the interrupted one. Here it must print what it prints on 0.9.119:

- on the frozen copies in ``crossversion/written-by-0.9.119/`` (always), against the output
  recorded there from 0.9.119;
- on files a live 0.9.119 writes now (when the reference venv exists), against a live 0.9.119 read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .harness import ROOT, reference_python

SCRIPTS = Path(__file__).resolve().parent / "crossversion"
FROZEN = SCRIPTS / "written-by-0.9.119"


def _run(
    python: str | Path, script: str, cwd: Path, *, ours: bool
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    if ours:
        env["PYTHONPATH"] = os.environ.get("LOVIA_COMPAT_SRC") or str(ROOT / "src")
    return subprocess.run(
        [str(python), str(SCRIPTS / script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _differences(want: dict[str, object], have: dict[str, object]) -> list[str]:
    return [
        f"{k}:\n  expected {json.dumps(want.get(k))}\n  got      {json.dumps(have.get(k))}"
        for k in sorted(set(want) | set(have))
        if want.get(k) != have.get(k)
    ]


def read_frozen(tmp_path: Path, files: tuple[str, ...], reader: str, recorded: str) -> None:
    """``reader`` run here on copies of frozen ``files`` 0.9.119 wrote prints what it printed
    under 0.9.119 (``recorded``)."""
    work = tmp_path / "files"
    work.mkdir()
    for name in files:
        shutil.copyfile(FROZEN / name, work / name)
    got = _run(sys.executable, reader, work, ours=True)
    assert got.returncode == 0, f"reading 0.9.119's files failed here:\n{got.stderr[-4000:]}"
    diff = _differences(json.loads((FROZEN / recorded).read_text()), json.loads(got.stdout))
    assert not diff, "\n".join(diff)


def written_then_read_on_both(tmp_path: Path, writer: str, reader: str) -> None:
    """``writer`` run by 0.9.119 in a fresh folder; ``reader`` on one copy under 0.9.119 and
    on another here prints the same (skipped without a 0.9.119 venv)."""
    python = reference_python()
    if python is None:
        pytest.skip(
            "no lovia 0.9.119 venv to write the files:"
            " run scripts/reference-venv.sh (or set LOVIA_REFERENCE_PYTHON)"
        )
    written = tmp_path / "written"
    written.mkdir()
    proc = _run(python, writer, written, ours=False)
    assert proc.returncode == 0, proc.stderr
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(written, theirs)
    shutil.copytree(written, ours)
    expected = _run(python, reader, theirs, ours=False)
    assert expected.returncode == 0, expected.stderr
    got = _run(sys.executable, reader, ours, ours=True)
    assert got.returncode == 0, f"reading 0.9.119's files failed here:\n{got.stderr[-4000:]}"
    diff = _differences(json.loads(expected.stdout), json.loads(got.stdout))
    assert not diff, "\n".join(diff)


def test_frozen_0_9_119_files_read_replay_and_resume_here(tmp_path: Path) -> None:
    read_frozen(tmp_path, ("chat.db", "runs.db"), "read_files.py", "read_on_0.9.119.json")


def test_files_written_by_0_9_119_read_replay_and_resume_here(tmp_path: Path) -> None:
    written_then_read_on_both(tmp_path, "write_files.py", "read_files.py")
