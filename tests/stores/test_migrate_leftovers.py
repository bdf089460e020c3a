"""A migration of a lovia 0.9.119 file leaves no pile of copies (issue 27, part 4): a backup
already there with the same rows is reused (no ``.2.bak``), and the ``*.partial`` /
``*.partial-journal`` files a killed attempt left are removed by the next one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOVIA = Path(sys.executable).with_name("lovia")


def test_repeated_migration_reuses_the_identical_backup_and_removes_leftovers(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "v0_9_119.sqlite", db)
    # what failed attempts left: their backup, and a killed copy with its journal
    shutil.copyfile(db, tmp_path / "old.db.0.9.119.bak")
    dead = "old.db.0.9.119.4999999.deadbeef.partial"  # no process has that id
    (tmp_path / dead).write_bytes(b"x" * 4096)
    (tmp_path / f"{dead}-journal").write_bytes(b"x" * 512)
    done = subprocess.run(
        [str(LOVIA), "migrate", str(db)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db", "old.db.0.9.119.bak"]


def test_a_file_size_limit_is_named_with_the_fix_and_leaves_nothing(tmp_path: Path) -> None:
    """Under ``ulimit -f`` smaller than the file, the copy cannot be written: the error says
    so and what to do; the file is as it was and no partial copy is left."""
    import resource

    db = tmp_path / "old.db"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "v0_9_119.sqlite", db)
    before = db.read_bytes()
    limit = db.stat().st_size // 2

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    for _ in range(2):
        done = subprocess.run(
            [str(LOVIA), "migrate", str(db)],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=small_files,
        )
        assert done.returncode != 0
        assert "file-size limit" in done.stderr and "ulimit" in done.stderr, done.stderr
        assert db.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["old.db"]
