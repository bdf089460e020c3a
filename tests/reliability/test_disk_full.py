"""A full disk and a read-only database: a write that fails leaves the previous state intact,
and the run ends ``failed`` or stays resumable, never half-written (issue 9; C2, C6, C10).

The file systems are real: a 1 MB tmpfs (needs root; else the tests skip and say why), and
a per-process file size limit (``RLIMIT_FSIZE``) in a child process, which works anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InputEntry,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    StoreError,
    tool,
)
from lovia.testing import ScriptedProvider, call, text

from .files import ENTRIES, rows


def _mount(point: Path, options: str) -> bool:
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], capture_output=True
    )
    return done.returncode == 0


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB file system of its own, unmounted afterwards."""
    point = tmp_path / "small"
    point.mkdir()
    if os.geteuid() != 0 or not _mount(point, "size=1m"):
        pytest.skip("mounting a 1 MB tmpfs needs root (the RLIMIT_FSIZE test covers the rest)")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def fill(directory: Path) -> Path:
    """Fill the file system with a filler file until a write fails; return the filler."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def _remount(point: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(point)], check=True)


def _free(filler: Path) -> None:
    filler.unlink()


@pytest.mark.parametrize("wal", [False, True], ids=["journal", "wal"])
async def test_an_append_on_a_full_disk_fails_clearly_and_keeps_what_was_stored(
    small_fs: Path, wal: bool
) -> None:
    path = small_fs / "chat.db"
    async with SQLiteSession(path, wal=wal) as s:
        await s.append("u1", ENTRIES, run_id="r1")
        filler = fill(small_fs)
        with pytest.raises(StoreError) as info:
            for i in range(200):  # pages may still be free inside the file; go past them
                await s.append(
                    "u1", [InputEntry(role="user", content="z" * 20_000)], run_id=f"x{i}"
                )
        assert "full" in str(info.value) and info.value.hint
        stored = await s.segments("u1")
        assert stored[0].entries == ENTRIES
        assert all(seg.entries[0].content == "z" * 20_000 for seg in stored[1:])  # type: ignore[union-attr]
        _free(filler)
        await s.append("u1", ENTRIES, run_id="after")
        assert [seg.run_id for seg in await s.segments("u1")][-1] == "after"
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]


@pytest.mark.parametrize("wal", [False, True], ids=["journal", "wal"])
async def test_a_run_that_fills_the_disk_stays_resumable_and_finishes_after_space_is_freed(
    small_fs: Path, wal: bool
) -> None:
    """The tool result cannot be saved: the run fails with StoreError, the checkpoint keeps
    the input and the model turn exactly as saved, and re-submitting finishes it."""
    path = small_fs / "runs.db"
    fillers: list[Path] = []
    ran: list[int] = []

    @tool
    def download() -> str:
        """Download a big file (onto the same disk)."""
        ran.append(1)
        if len(ran) == 1:
            fillers.append(fill(small_fs))
        return "d" * 300_000

    cp = SQLiteCheckpointer(path, wal=wal)
    # the full disk also stops the lease's release: a short ttl lets the retry take over soon
    opts = CheckpointOptions(cp, "r1", lease_ttl=1.0)
    model = ScriptedProvider([call("download", {})])
    agent = Agent("a", model=model, tools=[download], max_tool_output_chars=400_000)
    with pytest.raises(StoreError, match="full"):
        await Runner.run(agent, "fetch it", checkpoint=opts)
    snap = await cp.load("r1")
    assert snap is not None and snap.status in ("running", "failed")
    assert [e.type for e in snap.entries] == ["input", "tool_call"]
    _free(fillers[0])
    model = ScriptedProvider([text("fetched")])
    agent = Agent("a", model=model, tools=[download], max_tool_output_chars=400_000)
    result = await Runner.run(agent, "fetch it", checkpoint=opts)
    assert result.output == "fetched"
    assert len(ran) == 2  # the dangling call ran again (at least once, E2)
    await cp.close()
    assert rows(path, "PRAGMA integrity_check") == [("ok",)]


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """A directory and a switch that makes it read-only: a remounted tmpfs as root (root
    ignores file modes), file modes otherwise."""
    point = tmp_path / "ro"
    point.mkdir()
    mounted = os.geteuid() == 0 and _mount(point, "size=1m")
    if os.geteuid() == 0 and not mounted:
        pytest.skip("root here cannot mount a tmpfs, and file modes do not stop root")

    def switch(on: bool) -> None:
        if mounted:
            _remount(point, "ro" if on else "rw")
            return
        for p in [point, *point.iterdir()]:
            p.chmod((0o555 if p.is_dir() else 0o444) if on else 0o755)

    try:
        yield point, switch
    finally:
        switch(False)
        if mounted:
            subprocess.run(["umount", "-l", str(point)], check=False)


async def test_a_read_only_database_refuses_writes_and_still_reads(
    read_only: tuple[Path, Any],
) -> None:
    directory, make_read_only = read_only
    path = directory / "chat.db"
    async with SQLiteSession(path) as s:
        await s.append("u1", ENTRIES, run_id="r1")
    before = path.read_bytes()
    make_read_only(True)
    async with SQLiteSession(path) as s:
        assert [seg.run_id for seg in await s.segments("u1")] == ["r1"]
        with pytest.raises(StoreError) as info:
            await s.append("u1", ENTRIES, run_id="r2")
        assert info.value.hint
    assert path.read_bytes() == before
    make_read_only(False)
    async with SQLiteSession(path) as s:
        assert [seg.run_id for seg in await s.segments("u1")] == ["r1"]


CHILD = """
import asyncio, resource, signal, sys
from lovia import Agent, CheckpointOptions, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.testing import ScriptedProvider, call, text

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG

@tool
def report(n: int) -> str:
    '''Write part n of the report.'''
    return str(n) * 200_000

async def main(db, limit):
    script = [call("report", {"n": i}, call_id=f"c{i}") for i in range(1, 6)] + [text("ok")]
    agent = Agent("a", model=ScriptedProvider(script), tools=[report])
    async with SQLiteCheckpointer(db) as cp, SQLiteSession(db) as s:
        await cp.load("warm")  # the schema exists before the limit applies
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        try:
            await Runner.run(agent, "write", session=s, session_id="u1",
                             checkpoint=CheckpointOptions(cp, "r1"))
        except Exception as exc:
            print(type(exc).__name__, exc)
            return
        print("finished")

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def test_a_file_size_limit_mid_run_leaves_a_whole_checkpoint_that_resumes(tmp_path: Path) -> None:
    """Portable disk-full: the child's writes fail past 700 KB in the middle of the run."""
    db = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), str(700_000)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("StoreError"), done.stdout
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    heads = rows(db, "SELECT status, entry_count FROM checkpoint_runs WHERE run_id = 'r1'")
    assert heads and heads[0][0] in ("running", "failed") and 2 <= int(str(heads[0][1])) < 12
    assert rows(db, "SELECT COUNT(*) FROM lovia_session_segments") == [(0,)]
    again = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), str(1 << 40)], capture_output=True, text=True
    )
    assert again.stdout.strip() == "finished", again.stderr
    assert rows(db, "SELECT COUNT(*) FROM lovia_session_segments") == [(1,)]
