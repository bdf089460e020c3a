"""What a new user meets in the first hour with ``lovia``, through the real command in
subprocesses: a mistyped command is its usage, one error line and a hint, exit status 2, and
nothing created; a count reads right (``1 run``); a locked file is an error with a hint,
left as it was."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def lovia(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lovia", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_run_db(path: Path, *, wal: bool = True) -> Path:
    """A database as ``lovia chat`` leaves it (``wal=False``: as the README's tour leaves
    ``chat.db``): session ``u1`` with one checkpointed run."""

    async def write() -> None:
        agent = Agent("assistant", model=ScriptedProvider([text("Hello.")]))
        async with SQLiteSession(path, wal=wal) as session:
            async with SQLiteCheckpointer(path, wal=wal) as cp:
                await Runner.run(
                    agent, "Hi", session=session, session_id="u1", checkpoint=CheckpointOptions(cp)
                )

    asyncio.run(write())
    return path


MISTAKES = [
    ("lovia sessions", ["sessions"]),
    ("lovia runs", ["runs"]),
    ("lovia sessions rewind", ["sessions", "rewind", "u1", "--keep", "-1"]),
    ("lovia sessions rewind", ["sessions", "rewind", "u1"]),
    ("lovia sessions trim", ["sessions", "trim", "u1", "--keep-chars", "-5"]),
    ("lovia sessions trim", ["sessions", "trim", "u1", "--keep-runs", "many"]),
    ("lovia runs prune", ["runs", "prune", "--older-than", "3x"]),
    ("lovia sessions list", ["sessions", "list", "--dbb", "x.db"]),
    ("lovia runs list", ["runs", "list", "--status", "done"]),
    ("lovia web", ["web", "--port", "http"]),
]


@pytest.mark.parametrize(("prog", "args"), MISTAKES, ids=[" ".join(a) for _, a in MISTAKES])
def test_a_usage_mistake_is_one_error_line_and_a_hint_and_creates_nothing(
    prog: str, args: list[str], tmp_path: Path
) -> None:
    done = lovia(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"usage: {prog} "), lines
    assert lines[-2].startswith(f"{prog}: error: "), lines
    assert lines[-1] == f"{prog}: hint: '{prog} --help' shows what it takes", lines
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no .lovia folder, no database


@pytest.mark.parametrize(
    ("flag", "args"),
    [
        ("--keep", ["sessions", "rewind", "u1", "--keep", "-1"]),
        ("--keep-chars", ["sessions", "trim", "u1", "--keep-chars", "-1"]),
        ("--keep-runs", ["sessions", "trim", "u1", "--keep-runs", "-1"]),
    ],
)
def test_a_negative_count_is_refused_by_the_flag_the_user_typed(
    flag: str, args: list[str], tmp_path: Path
) -> None:
    db = one_run_db(tmp_path / "chat.db")
    before = digest(db)
    done = lovia(*args, "--db", str(db), cwd=tmp_path)
    assert done.returncode == 2
    assert f"error: argument {flag}: -1 is not a whole number >= 0" in done.stderr
    assert "keep_" not in done.stderr  # not the Python parameter's name
    assert digest(db) == before


def test_counts_are_said_in_the_right_number(tmp_path: Path) -> None:
    db = one_run_db(tmp_path / "chat.db")
    listed = lovia("sessions", "list", "--db", str(db), cwd=tmp_path)
    assert "  1 run  Hi" in listed.stdout, listed.stdout
    run_id = lovia("runs", "list", "--db", str(db), cwd=tmp_path).stdout.split()[0]
    shown = lovia("runs", "show", run_id, "--db", str(db), cwd=tmp_path)
    assert "agent assistant, 1 turn\n" in shown.stdout, shown.stdout
    rewound = lovia("sessions", "rewind", "u1", "--keep", "1", "--db", str(db), cwd=tmp_path)
    assert rewound.stdout == "removed 1 entry; deleted 1 checkpoint\n", rewound.stderr
    cleared = lovia("sessions", "clear", "u1", "--db", str(db), cwd=tmp_path)
    assert cleared.stdout == "cleared u1 (1 run)\n", cleared.stderr

    old = tmp_path / "old.db"
    shutil.copyfile(FIXTURES / "v0_9_119.sqlite", old)
    check = lovia("migrate", "--check", str(old), cwd=tmp_path)
    assert "would convert 1 session (2 runs) and 5 checkpoints" in check.stdout, check.stdout


def test_a_locked_database_is_an_error_with_a_hint_and_is_left_as_it_was(tmp_path: Path) -> None:
    db = one_run_db(tmp_path / "chat.db", wal=False)  # in WAL mode a writer blocks no reader
    before = digest(db)
    holder = sqlite3.connect(db, isolation_level=None)  # a sqlite3 shell mid-transaction
    try:
        holder.execute("BEGIN EXCLUSIVE")
        for command in (["sessions", "list"], ["runs", "list"]):
            done = lovia(*command, "--db", str(db), cwd=tmp_path)
            assert done.returncode == 2, done.stdout
            lines = done.stderr.splitlines()
            assert lines[0].startswith("lovia: error: ") and "locked" in lines[0], lines
            assert len(lines) == 2 and lines[1].startswith("lovia: hint: "), lines
            assert "try again once it is done" in lines[1], lines  # not wal=True: a program's
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert digest(db) == before


def test_approving_a_run_that_waits_for_nothing_points_at_the_command_that_lists_calls(
    tmp_path: Path,
) -> None:
    db = one_run_db(tmp_path / "chat.db")
    run_id = lovia("runs", "list", "--db", str(db), cwd=tmp_path).stdout.split()[0]
    before = digest(db)
    done = lovia("runs", "approve", run_id, "call_1", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"lovia: error: run {run_id!r} is not waiting for an approval (completed)",
        "lovia: hint: 'lovia runs approvals' lists the calls that wait for one",
    ]
    assert digest(db) == before


def test_a_database_server_that_refuses_the_connection_is_one_error_line_and_a_hint(
    tmp_path: Path,
) -> None:
    pytest.importorskip("psycopg", reason="needs lovia[postgres]")
    with socket.socket() as probe:  # a port nothing listens on: the connection is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = lovia("runs", "list", "--db", f"postgresql://nobody@127.0.0.1:{port}/none", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 2, lines  # the driver's two-line message, as one line
    assert lines[0].startswith("lovia: error: could not connect to PostgreSQL"), lines
    assert lines[1].startswith("lovia: hint: check the DSN"), lines


def test_resuming_a_completed_run_without_a_model_says_there_is_nothing_to_resume(
    tmp_path: Path,
) -> None:
    db = one_run_db(tmp_path / "chat.db")
    run_id = lovia("runs", "list", "--db", str(db), cwd=tmp_path).stdout.split()[0]
    before = digest(db)
    done = lovia("runs", "resume", run_id, "--db", str(db), cwd=tmp_path)  # no LOVIA_MODEL
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"lovia: error: run {run_id!r} has completed: there is nothing to resume",
        f"lovia: hint: 'lovia runs show {run_id}' prints it, its answer included",
    ]
    assert digest(db) == before
