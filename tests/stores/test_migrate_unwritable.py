"""``lovia migrate`` on a 0.9.119 file in a place it cannot write (issue 27, part 4): a
folder this user cannot write, a read-only filesystem, a full disk. The error names the
cause and the fix, the file is untouched and nothing is left next to it, however often it is
tried. And a migration killed (SIGKILL) while it writes its backup copy leaves a partial copy
that the next attempt removes before it migrates."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "v0_9_119.sqlite"
LOVIA = Path(sys.executable).with_name("lovia")
NOBODY = 65534


def _migrate(
    db: Path, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LOVIA), "migrate", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=preexec,
    )


def _refused_twice(
    db: Path, cause: str, fix: str, preexec: Callable[[], None] | None = None
) -> None:
    """Two attempts: each fails naming ``cause`` and ``fix``; the file is as it was and no
    other file appears."""
    before, names = db.read_bytes(), sorted(p.name for p in db.parent.iterdir())
    for _ in range(2):
        done = _migrate(db, preexec)
        assert done.returncode != 0
        assert cause in done.stderr and fix in done.stderr, done.stderr
        assert db.read_bytes() == before
        assert sorted(p.name for p in db.parent.iterdir()) == names


def test_a_folder_this_user_cannot_write_is_named_as_read_only() -> None:
    """As a user without write access to the folder (root runs the command as ``nobody``)."""
    folder = Path(tempfile.mkdtemp(prefix="lovia-ro-"))
    try:
        db = folder / "old.db"
        shutil.copyfile(FIXTURE, db)
        preexec: Callable[[], None] | None = None
        if os.geteuid() == 0:
            folder.chmod(0o755)  # nobody may read, not write
            db.chmod(0o644)

            def preexec() -> None:
                os.setgid(NOBODY)
                os.setuid(NOBODY)

            try:
                runs = not subprocess.run(
                    [str(LOVIA), "--version"], capture_output=True, preexec_fn=preexec
                ).returncode
            except OSError:
                runs = False
            if not runs:
                pytest.skip(
                    "running as root, and the user 'nobody' cannot run this environment's "
                    "lovia (its folders are private): the read-only filesystem test stands in"
                )
        else:
            folder.chmod(0o555)
        _refused_twice(db, "read-only", "make the folder writable", preexec)
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[int], Path]]:
    """Mount a small tmpfs (``size`` bytes) under ``tmp_path``; skipped where mounting is
    not allowed (it needs CAP_SYS_ADMIN)."""
    mounted: list[Path] = []

    def mount(size: int) -> Path:
        point = tmp_path / f"fs{len(mounted)}"
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}): needs CAP_SYS_ADMIN")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", str(point)], check=False)


def test_a_read_only_filesystem_is_named(tmpfs: Callable[[int], Path]) -> None:
    point = tmpfs(1 << 20)
    db = point / "old.db"
    shutil.copyfile(FIXTURE, db)
    remount = subprocess.run(["mount", "-o", "remount,ro", str(point)], capture_output=True)
    if remount.returncode != 0:
        pytest.skip("cannot remount the tmpfs read-only here")
    _refused_twice(db, "read-only", "make the folder writable")


def test_a_full_disk_is_named_with_the_space_it_needs(tmpfs: Callable[[int], Path]) -> None:
    size = FIXTURE.stat().st_size
    point = tmpfs(size + 16 * 1024)  # the file fits; a copy of it does not
    db = point / "old.db"
    shutil.copyfile(FIXTURE, db)
    _refused_twice(db, "bytes free", f"free at least {2 * size} bytes")


def _big_legacy_file(path: Path, megabytes: int) -> None:
    """The 0.9.119 fixture with a table of filler, so copying it takes a while."""
    shutil.copyfile(FIXTURE, path)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE filler (data BLOB)")
    conn.executemany(
        "INSERT INTO filler VALUES (?)", ((os.urandom(1 << 20),) for _ in range(megabytes))
    )
    conn.commit()
    conn.close()


def test_a_migration_killed_while_copying_leaves_a_partial_the_next_one_removes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    partial: list[Path] = []
    for megabytes in (200, 400, 800):  # a machine that copies faster than we look: bigger
        _big_legacy_file(db, megabytes)
        proc = subprocess.Popen(
            [str(LOVIA), "migrate", str(db)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            while proc.poll() is None:
                partial = [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]
                if partial and partial[0].stat().st_size > 0:
                    proc.send_signal(signal.SIGKILL)
                    break
                time.sleep(0.001)
        finally:
            proc.wait()
        if proc.returncode == -signal.SIGKILL:
            break
        for p in tmp_path.iterdir():
            p.unlink()
    else:
        pytest.skip("every migration finished its copy before it could be killed")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")]
    done = _migrate(db)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db", "old.db.0.9.119.bak"]
    conn = sqlite3.connect(db)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "filler" in tables and "session_runs" not in tables
