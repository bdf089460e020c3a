"""Bad input to the ``lovia`` command, found by the bad-input audit: each refusal exits 2 with
a ``lovia: error:`` line and a ``lovia: hint:`` line, never a traceback, and leaves the
database byte for byte as it was."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, call, text

from .test_unknown_ids import files

LOVIA = str(Path(sys.executable).with_name("lovia"))


def one_run_db(db: Path) -> Path:
    async def fill() -> None:
        async with SQLiteSession(db) as s, SQLiteCheckpointer(db) as cp:
            agent = Agent("a", model=ScriptedProvider([text("hi")]))
            opts = CheckpointOptions(cp, "run1")
            await Runner.run(agent, "hello", session=s, session_id="chat1", checkpoint=opts)

    asyncio.run(fill())
    return db


def lovia(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LOVIA, *args], capture_output=True, text=True, cwd=cwd, timeout=60, check=False
    )


def test_migrate_refuses_a_file_a_newer_lovia_wrote(tmp_path: Path) -> None:
    # 'lovia migrate' said "already in this lovia's format; nothing to do" (exit 0) for a
    # file whose schema is newer than this lovia reads, while every store refuses to open it
    db = one_run_db(tmp_path / "app.db")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE lovia_meta SET value = '99' WHERE key = 'schema:checkpoint'")
    conn.close()
    before = files(tmp_path)
    for args in (["migrate", str(db)], ["migrate", "--check", str(db)]):
        done = lovia(*args, cwd=tmp_path)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert "nothing to do" not in done.stdout
        lines = done.stderr.splitlines()
        assert lines[0].startswith("lovia: error: ") and "version 99" in lines[0], lines
        assert lines[1].startswith("lovia: hint: upgrade lovia"), lines
        assert "Traceback" not in done.stderr
        assert files(tmp_path) == before


def test_runs_approvals_given_an_empty_id_refuses_it(tmp_path: Path) -> None:
    # an empty id (a script's unset "$RUN") listed the calls of every parked run, exit 0
    db = one_run_db(tmp_path / "app.db")
    before = files(tmp_path)
    done = lovia("runs", "approvals", "", "--db", str(db), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert lines[0] == "lovia: error: run_id must be a non-empty string, got ''", lines
    assert lines[1].startswith("lovia: hint: "), lines
    assert files(tmp_path) == before


@pytest.mark.parametrize("command", [("sessions", "export", "chat1"), ("runs", "export", "run1")])
@pytest.mark.parametrize("target", ["app.db", "./app.db", "other.db"])
def test_an_export_never_writes_over_a_database(
    tmp_path: Path, command: tuple[str, ...], target: str
) -> None:
    # '--out app.db --db app.db' replaced the database with the JSON export (exit 0): every
    # session and run in it was gone
    db = one_run_db(tmp_path / "app.db")
    shutil.copyfile(db, tmp_path / "other.db")
    before = files(tmp_path)
    done = lovia(*command, "--db", "app.db", "--out", target, cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"lovia: error: --out {target!r} is "), lines
    assert lines[1] == "lovia: hint: pass --out a new file, e.g. --out export.json", lines
    assert files(tmp_path) == before
    done = lovia(*command, "--db", "app.db", "--out", "export.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "export.json").read_text(encoding="utf-8").startswith("{")


def test_stored_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    # a model's answer or a tool's output is untrusted; 'sessions show' and 'runs show'
    # printed it raw, so an ESC sequence in it cleared the screen or set the clipboard
    evil = "ok\x1b[2J\x1b]52;c;ZXZpbA==\x07done\x00"
    db = tmp_path / "app.db"

    async def fill() -> None:
        async with SQLiteSession(db) as s, SQLiteCheckpointer(db) as cp:
            agent = Agent("a", model=ScriptedProvider([text(evil)]))
            opts = CheckpointOptions(cp, "run1")
            await Runner.run(agent, evil, session=s, session_id="chat1", checkpoint=opts)

    asyncio.run(fill())
    for command in (("sessions", "show", "chat1"), ("runs", "show", "run1")):
        done = lovia(*command, "--db", str(db), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout, command
        assert "\\x1b[2J" in done.stdout, done.stdout  # shown, escaped


@pytest.mark.parametrize("session", ["x" * 600, ""])
def test_chat_refuses_a_session_id_no_store_takes_before_the_chat_starts(
    tmp_path: Path, session: str
) -> None:
    # the chat started, every message failed with '[run failed: session_id is 600
    # characters long ...]', and it ended with "bye (session ... is stored in ...)", exit 0
    db = one_run_db(tmp_path / "app.db")
    before = files(tmp_path)
    done = subprocess.run(
        [LOVIA, "chat", "--demo", "--db", str(db), "--session", session],
        input="hi\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""  # no banner, no prompt
    lines = done.stderr.splitlines()
    assert lines[0].startswith("lovia: error: --session "), lines
    assert lines[1].startswith("lovia: hint: "), lines
    assert files(tmp_path) == before


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"[]", "a run snapshot is a JSON object, got list"),  # was an AttributeError traceback
        (b"\xff\x00\xff", "is not a run written by"),  # was a UnicodeDecodeError traceback
        (b"{}", "it has no 'run_id'"),  # was "('run_id')"
    ],
)
def test_retest_from_a_file_that_is_no_export_says_so(
    tmp_path: Path, content: bytes, words: str
) -> None:
    recording = tmp_path / "run.json"
    recording.write_bytes(content)
    done = lovia("runs", "retest", "--from", str(recording), "--demo", cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("lovia: error: ") and words in lines[0], lines
    assert lines[1].startswith("lovia: hint: "), lines


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_an_export_to_a_named_pipe_is_written_not_read(tmp_path: Path) -> None:
    # the check for a database at --out opened it to read its header: a FIFO (or a terminal,
    # '--out /dev/stdout') blocked that read for good, and the export never came
    db = one_run_db(tmp_path / "app.db")
    pipe = tmp_path / "export.pipe"
    os.mkfifo(pipe)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_text(encoding="utf-8")))
    reader.start()
    try:
        done = lovia("runs", "export", "run1", "--db", str(db), "--out", str(pipe), cwd=tmp_path)
    finally:
        if reader.is_alive():  # unblock the reader whatever happened
            with open(pipe, "w", encoding="utf-8"):
                pass
        reader.join(10)
    assert done.returncode == 0, done.stderr
    assert got and got[0].startswith("{") and '"run1"' in got[0]


def test_a_models_tool_name_and_a_title_cannot_drive_the_terminal(tmp_path: Path) -> None:
    # the escaping covered messages and outputs, not a tool call's name (the model's), its
    # id (the provider's), the title 'sessions list' prints (the first message), nor the
    # answer 'runs show --follow' ends with
    db = tmp_path / "app.db"
    name, call_id = "x\x1b[2Jy", "c\x1b]52;c;ZXZpbA==\x07"

    async def fill() -> None:
        async with SQLiteSession(db) as s, SQLiteCheckpointer(db) as cp:
            model = ScriptedProvider([call(name, {}, call_id=call_id), text("ok\x1b[2J")])
            opts = CheckpointOptions(cp, "run1")
            agent = Agent("a", model=model)
            await Runner.run(agent, "hi\x1b[2J", session=s, session_id="chat1", checkpoint=opts)

    asyncio.run(fill())
    shows = (("sessions", "show", "chat1"), ("runs", "show", "run1"), ("sessions", "list"))
    for command in (*shows, ("runs", "show", "run1", "--follow")):
        done = lovia(*command, "--db", str(db), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout, (command, done.stdout)
        assert "\\x1b[2J" in done.stdout, done.stdout
