"""`lovia sessions ...` and `lovia runs ...` on a real SQLite file a crashed worker left
behind: the read-only commands change no byte of it, the indices `sessions show` prints are
the ones `sessions rewind --keep` counts (S10), a rewind drops the rewound runs' checkpoints
so a re-submission cannot write the undone tail back (S11), and errors carry a hint."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, run_worker

LOVIA = str(Path(sys.executable).with_name("lovia"))

READ_ONLY = [
    ["sessions", "list"],
    ["sessions", "list", "--json"],
    ["sessions", "show", "s1"],
    ["sessions", "show", "s1", "--json"],
    ["sessions", "export", "s1"],
    ["runs", "list"],
    ["runs", "list", "--json"],
    ["runs", "show", "r-crashed"],
    ["runs", "show", "r-crashed", "--json"],
    ["runs", "approvals"],
]


def lovia(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [LOVIA, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def worker_cfg(path: Path, run_id: str, **kw: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "store": {"kind": kw.pop("kind", "sqlite-wal"), "path": str(path)},
        "run_id": run_id,
        "session_id": "s1",
        "input": f"question of {run_id}",
        "log": str(path.with_suffix(".log")),
        "script": [["call", "a", {}, "ca"], ["call", "b", {}, "cb"], ["text", f"answer {run_id}"]],
    }
    cfg.update(kw)
    return cfg


@pytest.fixture(scope="module", params=["sqlite", "sqlite-wal"])
def crashed_template(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """Two completed runs of s1, one of s2, and a run killed inside a tool (built once)."""
    db = tmp_path_factory.mktemp("template") / "app.db"
    kind = request.param
    for rid, sid in (("r-one", "s1"), ("r-two", "s1"), ("r-other", "s2")):
        assert run_worker(worker_cfg(db, rid, kind=kind, session_id=sid)).answer is not None
    crashed = run_worker(worker_cfg(db, "r-crashed", kind=kind, kill={"tool": "b"}))
    assert crashed.returncode < 0
    (db.with_suffix(".log")).unlink()
    # in WAL mode the killed worker's last writes are still in the -wal file
    assert Path(f"{db}-wal").exists() == (kind == "sqlite-wal")
    return db


@pytest.fixture
def crashed_db(crashed_template: Path, tmp_path: Path) -> Path:
    """A copy of the template: the files the killed worker left (a WAL file among them)."""
    for f in crashed_template.parent.iterdir():
        shutil.copyfile(f, tmp_path / f.name)
    return tmp_path / crashed_template.name


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file of the folder and its bytes' digest; SQLite's shared-memory index (-shm),
    which any reader of a WAL file updates, is only required to stay present or absent."""
    return {
        p.name: "present" if p.name.endswith("-shm") else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
    }


def test_read_only_commands_leave_the_file_a_crashed_worker_left_byte_for_byte(
    crashed_db: Path,
) -> None:
    before = fingerprint(crashed_db.parent)
    for command in READ_ONLY:
        done = lovia(*command, "--db", str(crashed_db), cwd=crashed_db.parent)
        assert done.returncode == 0, (command, done.stderr)
        assert fingerprint(crashed_db.parent) == before, command


def test_the_commands_show_what_the_stores_hold(crashed_db: Path) -> None:
    """S2, S6, C3: sessions list their completed runs; the crashed run is a checkpoint in
    state "running", not part of the session."""
    db = ["--db", str(crashed_db)]
    cwd = crashed_db.parent
    sessions = {
        s["session_id"]: s for s in as_json(lovia("sessions", "list", "--json", *db, cwd=cwd))
    }
    assert set(sessions) == {"s1", "s2"} and sessions["s1"]["runs"] == 2
    runs = {r["run_id"]: r for r in as_json(lovia("runs", "list", "--json", *db, cwd=cwd))}
    assert {k: v["status"] for k, v in runs.items()} == {
        "r-one": "completed",
        "r-two": "completed",
        "r-other": "completed",
        "r-crashed": "running",
    }
    shown = as_json(lovia("runs", "show", "r-crashed", "--json", *db, cwd=cwd))
    assert [e["type"] for e in shown["entries"]] == [
        "input",
        "tool_call",
        "tool_result",
        "tool_call",
    ]
    entries = as_json(lovia("sessions", "show", "s1", "--json", *db, cwd=cwd))
    assert [e["index"] for e in entries] == list(range(12))
    assert "question of r-crashed" not in json.dumps(entries)
    exported = as_json(lovia("sessions", "export", "s1", *db, cwd=cwd))
    assert [r["run_id"] for r in exported["runs"]] == ["r-one", "r-two"]


async def test_a_cli_rewind_cuts_at_the_shown_index_and_a_resubmission_cannot_undo_it(
    crashed_db: Path,
) -> None:
    """S10, S11: `sessions rewind --keep 9` keeps entries 0..8 as `sessions show` numbers
    them (r-one is 0..5). Entry 8 is r-two's first tool result, so r-two is cut inside and
    keeps its input, call and result; r-two's checkpoint goes with the rewind. Re-submitting
    r-two then does not put the undone answer back."""
    db = ["--db", str(crashed_db)]
    cwd = crashed_db.parent
    shown = as_json(lovia("sessions", "show", "s1", "--json", *db, cwd=cwd))
    assert shown[8]["type"] == "tool_result" and shown[11]["content"] == "answer r-two"
    done = lovia("sessions", "rewind", "s1", "--keep", "9", *db, cwd=cwd)
    assert done.returncode == 0, done.stderr
    after = as_json(lovia("sessions", "show", "s1", "--json", *db, cwd=cwd))
    assert after == shown[:9]
    runs = {r["run_id"] for r in as_json(lovia("runs", "list", "--json", *db, cwd=cwd))}
    assert "r-two" not in runs and "r-one" in runs

    kind = "sqlite-wal" if any(p.name.endswith("-wal") for p in cwd.iterdir()) else "sqlite"
    again = run_worker(worker_cfg(crashed_db, "r-two", kind=kind, script=[["text", "fresh"]]))
    assert again.answer is not None, again.stderr
    final = as_json(lovia("sessions", "show", "s1", "--json", *db, cwd=cwd))
    assert "answer r-two" not in json.dumps(final)


@pytest.mark.parametrize(
    "command",
    [
        ["runs", "show", "no-such-run"],
        ["runs", "resume", "no-such-run"],
        ["runs", "resume", "r-crashed"],  # no model configured
        ["runs", "approve", "no-such-run", "c1"],
        ["runs", "reject", "no-such-run", "c1"],
        ["sessions", "rewind", "s1", "--keep", "-1"],
        ["sessions", "trim", "s1", "--keep-chars", "-5"],
        ["sessions", "trim", "s1", "--keep-runs", "-1"],
    ],
    ids=lambda c: " ".join(c),
)
def test_a_refused_command_says_why_and_what_to_do_next_and_changes_nothing(
    crashed_db: Path, command: list[str]
) -> None:
    before = fingerprint(crashed_db.parent)
    done = lovia(*command, "--db", str(crashed_db), cwd=crashed_db.parent)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "error" in done.stderr and "hint" in done.stderr, done.stderr
    assert fingerprint(crashed_db.parent) == before


def test_a_missing_database_is_an_error_with_a_hint_and_is_not_created(tmp_path: Path) -> None:
    for command in (["sessions", "list"], ["runs", "list"]):
        done = lovia(*command, "--db", str(tmp_path / "nope.db"), cwd=tmp_path)
        assert done.returncode != 0 and "hint" in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        ["sessions", "list"],
        ["sessions", "show", "chat-1"],
        ["sessions", "export", "chat-1"],
        ["runs", "list"],
        ["runs", "show", "r-interrupted"],
        ["runs", "approvals"],
        ["runs", "show", "no-such-run"],
        ["runs", "resume", "no-such-run"],
        ["runs", "resume", "r-interrupted"],  # no model configured
        ["runs", "approve", "no-such-run", "c1"],
    ],
    ids=lambda c: " ".join(c),
)
def test_a_file_lovia_0_9_119_wrote_is_not_converted_by_looking_or_by_a_refused_command(
    tmp_path: Path, command: list[str]
) -> None:
    """Only a command that writes migrates a 0.9.119 file: reading it, or a command refused
    before it did anything (an unknown run, no model to resume with), leaves it as it was."""
    db = tmp_path / "old.db"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "v0_9_119.sqlite", db)
    before = fingerprint(tmp_path)
    done = lovia(*command, "--db", str(db), cwd=tmp_path)
    assert "Traceback" not in done.stderr
    assert done.returncode == 0 or "hint" in done.stderr, done.stderr
    assert fingerprint(tmp_path) == before
