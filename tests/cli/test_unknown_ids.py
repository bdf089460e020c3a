"""Every ``lovia sessions``/``lovia runs`` command given an id nothing is stored under says so
on stderr with a hint and exits 2, as the documented exit status promises for an unknown id
(``sessions show``/``export``/``trim``/``rewind``/``clear`` and ``runs delete`` exited 0; the
changing ones even wrote to the file). The database is byte for byte as it was."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession
from lovia.testing import ScriptedProvider, text

LOVIA = str(Path(sys.executable).with_name("lovia"))

UNKNOWN = [
    ("sessions", "show", "nosuch"),
    ("sessions", "show", "nosuch", "--json"),
    ("sessions", "export", "nosuch"),
    ("sessions", "trim", "nosuch"),
    ("sessions", "rewind", "nosuch", "--keep", "0"),
    ("sessions", "clear", "nosuch"),
    ("runs", "show", "nosuch"),
    ("runs", "delete", "nosuch"),
    ("runs", "delete", "nosuch", "--json"),
]


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with session ``chat1`` and its checkpointed run ``run1``."""
    db = tmp_path_factory.mktemp("unknown") / "app.db"

    async def fill() -> None:
        async with SQLiteSession(db, wal=True) as s, SQLiteCheckpointer(db, wal=True) as cp:
            agent = Agent("a", model=ScriptedProvider([text("hi")]))
            opts = CheckpointOptions(cp, "run1")
            await Runner.run(agent, "hello", session=s, session_id="chat1", checkpoint=opts)

    asyncio.run(fill())
    return db


def files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("command", UNKNOWN, ids=" ".join)
def test_an_unknown_id_exits_2_and_changes_nothing(
    stored: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    db = tmp_path / "app.db"
    db.write_bytes(stored.read_bytes())
    before = files(tmp_path)
    done = subprocess.run(
        [LOVIA, *command, "--db", str(db)], capture_output=True, text=True, timeout=60
    )
    kind = "session" if command[0] == "sessions" else "run"
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"no {kind} 'nosuch'" in done.stderr and "hint:" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert files(tmp_path) == before


def test_the_known_ids_still_work(stored: Path, tmp_path: Path) -> None:
    db = tmp_path / "app.db"
    db.write_bytes(stored.read_bytes())

    def lovia(*args: str) -> subprocess.CompletedProcess[str]:
        run = [LOVIA, *args, "--db", str(db)]
        return subprocess.run(run, capture_output=True, text=True, timeout=60)

    assert "[1] assistant: hi" in lovia("sessions", "show", "chat1").stdout
    assert lovia("runs", "delete", "run1").returncode == 0
    assert lovia("runs", "delete", "run1").returncode == 2  # gone now
    cleared = lovia("sessions", "clear", "chat1")
    assert cleared.returncode == 0, cleared.stderr
    assert lovia("sessions", "show", "chat1").returncode == 2  # a cleared session is gone
