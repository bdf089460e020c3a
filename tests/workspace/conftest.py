"""Helpers for the workspace tests: a tree's exact contents (to prove nothing was written) and
a heartbeat a process leaves on disk (to prove it is dead)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import sys
from pathlib import Path

import pytest

PY = shlex.quote(sys.executable)


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry below ``root`` (links not followed) and what it holds."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted([*dirnames, *filenames]):
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir" if p.is_dir() else "special"
    return out


def heartbeat_command(beat: Path) -> str:
    """A command whose grandchild appends a dot to ``beat`` every 50 ms until killed."""
    script = (
        f"import time\nwhile True:\n    open({str(beat)!r}, 'a').write('.')\n    time.sleep(0.05)\n"
    )
    return f"{PY} -c {shlex.quote(script)} && echo never"


def _size(path: Path) -> int:
    """The file's size, 0 while it does not exist."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


async def wait_for_beat(beat: Path, timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not _size(beat):
        assert loop.time() < deadline, "the heartbeat never started"
        await asyncio.sleep(0.05)


async def assert_stopped(beat: Path) -> None:
    """The heartbeat no longer grows: whatever wrote it is dead."""
    await asyncio.sleep(0.3)  # a write already under way may still land
    size = _size(beat)
    await asyncio.sleep(0.5)
    assert _size(beat) == size, "the process kept running"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace root, with a secret in it."""
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret.txt").write_text("TOP SECRET\n")
    return place


@pytest.fixture
def root(tmp_path: Path) -> Path:
    place = tmp_path / "ws"
    place.mkdir()
    (place / "notes.txt").write_text("hello\n")
    return place
