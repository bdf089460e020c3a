"""Commands that only read open the database read-only: they never create, convert, switch
to WAL or fold a WAL in (issue 14, finding 9); ``runs prune`` deletes nothing unless told
which runs (issue 17)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import SchemaError, UserError
from lovia.checkpointer import RunHead
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.transcript import InputEntry

from .pg import drop_prefix, fresh_prefix, postgres_dsn

ROOT = Path(__file__).resolve().parents[2]


def lovia_cli(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from lovia.cli import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def header_mode(path: Path) -> int:
    """1: rollback journal, 2: WAL (the file format bytes of the SQLite header)."""
    return path.read_bytes()[18]


async def make_lovia_db(path: Path, *, wal: bool) -> None:
    async with SQLiteSession(path, wal=wal) as session, SQLiteCheckpointer(path, wal=wal) as cp:
        await session.append("s1", [InputEntry(content="hello")], run_id="r1")
        await cp.append("r1", [InputEntry(content="hello")], RunHead("a", status="completed"))


READ_COMMANDS = [
    ("sessions", "list"),
    ("sessions", "show", "s1"),
    ("sessions", "export", "s1"),
    ("runs", "list"),
    ("runs", "show", "r1"),
]


def test_a_foreign_wal_database_is_refused_and_its_wal_left_alone(tmp_path: Path) -> None:
    """Another application's WAL database, its writer killed: the WAL holds its last commit."""
    path = tmp_path / "other.db"
    writer = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
        "c.execute('CREATE TABLE orders (id INTEGER)')\n"
        "c.execute('INSERT INTO orders VALUES (1)')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(path)], check=True, timeout=60)
    before = files(tmp_path)
    assert "other.db-wal" in before
    for command in READ_COMMANDS:
        done = lovia_cli(*command, "--db", str(path))
        assert done.returncode == 2, done.stderr
        assert "not a lovia database" in done.stderr and "hint:" in done.stderr
    after = files(tmp_path)
    assert after["other.db"] == before["other.db"]
    assert after["other.db-wal"] == before["other.db-wal"]  # not folded in, not deleted


@pytest.mark.parametrize("kind", ["empty file", "no tables"])
def test_an_empty_or_table_less_file_is_not_made_a_lovia_database(
    kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "x.db"
    if kind == "empty file":
        path.touch()
    else:
        with sqlite3.connect(path) as conn:
            conn.execute("PRAGMA user_version = 7")
        conn.close()
    before = files(tmp_path)
    for command in READ_COMMANDS:
        done = lovia_cli(*command, "--db", str(path))
        assert done.returncode == 2 and "not a lovia database" in done.stderr, done.stderr
    assert files(tmp_path) == before


def test_reading_a_lovia_file_does_not_switch_it_to_wal_or_change_it(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    asyncio.run(make_lovia_db(path, wal=False))
    before = files(tmp_path)
    assert header_mode(path) == 1
    for command in READ_COMMANDS:
        done = lovia_cli(*command, "--db", str(path), "--json")
        assert done.returncode == 0, done.stderr
    assert (
        json.loads(lovia_cli("runs", "list", "--db", str(path), "--json").stdout)[0]["run_id"]
        == "r1"
    )
    assert files(tmp_path) == before
    assert header_mode(path) == 1


@pytest.fixture
def immutable_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder whose files nobody, root included, can change (``chattr +i``)."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    folder = tmp_path / "frozen"
    folder.mkdir()
    yield folder
    for p in [*folder.iterdir(), folder]:
        subprocess.run(["chattr", "-i", str(p)], check=False)


@pytest.mark.parametrize("wal", [False, True])
def test_a_file_that_cannot_be_written_can_be_listed(immutable_folder: Path, wal: bool) -> None:
    path = immutable_folder / "app.db"
    asyncio.run(make_lovia_db(path, wal=wal))
    for p in (path, immutable_folder):
        if subprocess.run(["chattr", "+i", str(p)], capture_output=True).returncode:
            pytest.skip("this filesystem does not allow chattr +i")
    with pytest.raises(OSError):
        path.open("ab").close()
    before = files(immutable_folder)
    for command in READ_COMMANDS:
        done = lovia_cli(*command, "--db", str(path), "--json")
        assert done.returncode == 0, done.stderr
    assert (
        json.loads(lovia_cli("sessions", "list", "--db", str(path), "--json").stdout)[0]["title"]
        == "hello"
    )
    assert files(immutable_folder) == before


async def test_read_only_sqlite_stores_refuse_writes_and_read_missing_tables_as_empty(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions-only.db"
    async with SQLiteSession(path) as session:
        await session.append("s1", [InputEntry(content="hi")], run_id="r1")
    before = files(tmp_path)
    async with (
        SQLiteSession(path, read_only=True) as session,
        SQLiteCheckpointer(path, read_only=True) as cp,
    ):
        assert len(await session.load("s1")) == 1
        assert await cp.list_runs() == [] and await cp.load("r1") is None
        for write in (
            session.append("s1", [InputEntry(content="x")]),
            session.clear("s1"),
            cp.append("r1", [], RunHead("a")),
            cp.delete("r1"),
            cp.acquire_lease("r1", "me", 30.0),
        ):
            with pytest.raises(UserError, match="read-only"):
                await write
    assert files(tmp_path) == before
    with pytest.raises(UserError):
        async with SQLiteSession(tmp_path / "missing.db", read_only=True) as missing:
            await missing.load("s1")
    assert not (tmp_path / "missing.db").exists()


async def test_read_only_postgres_stores_create_nothing_and_refuse_writes() -> None:
    dsn = postgres_dsn()
    from lovia.stores import PostgresCheckpointer, PostgresSession

    prefix = fresh_prefix()
    try:
        async with PostgresSession(dsn, table_prefix=prefix, read_only=True) as reader:
            with pytest.raises(SchemaError) as info:
                await reader.list_sessions()
            assert info.value.hint
        assert _pg_tables(dsn, prefix) == []
        async with (
            PostgresSession(dsn, table_prefix=prefix) as session,
            PostgresCheckpointer(dsn, table_prefix=prefix) as cp,
        ):
            await session.append("s1", [InputEntry(content="hi")], run_id="r1")
            await cp.append("r1", [], RunHead("a"))
        async with (
            PostgresSession(dsn, table_prefix=prefix, read_only=True) as session,
            PostgresCheckpointer(dsn, table_prefix=prefix, read_only=True) as cp,
        ):
            assert len(await session.load("s1")) == 1
            assert [r.run_id for r in await cp.list_runs()] == ["r1"]
            writes: list[Any] = [
                session.append("s1", [InputEntry(content="x")]),
                cp.append("r1", [], RunHead("a")),
                cp.delete("r1"),
                cp.prune(older_than=0),
                cp.acquire_lease("r1", "me", 30.0),
            ]
            for write in writes:
                with pytest.raises(UserError, match="read-only"):
                    await write
            assert len(await session.load("s1")) == 1
    finally:
        drop_prefix(dsn, prefix)


def _pg_tables(dsn: str, prefix: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE starts_with(tablename, %s)", (prefix,)
        ).fetchall()
    return [r[0] for r in rows]


# -- runs prune (issue 17) ----------------------------------------------------------------------


async def fill_runs(path: Path) -> None:
    now = time.time()
    async with SQLiteCheckpointer(path, wal=True) as cp:
        for rid, status, age in [
            ("old-done", "completed", 40 * 86400),
            ("new-done", "completed", 60),
            ("old-failed", "failed", 40 * 86400),
            ("old-running", "running", 40 * 86400),
        ]:
            await cp.append(rid, [], RunHead("a", status=status, updated_at=now - age))  # type: ignore[arg-type]


async def stored_runs(path: Path) -> list[str]:
    async with SQLiteCheckpointer(path, read_only=True) as cp:
        return sorted(r.run_id for r in await cp.list_runs())


async def test_runs_prune_needs_an_age_or_all_and_offers_a_dry_run(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    await fill_runs(path)
    everything = await stored_runs(path)
    for args in ([], ["--older-than", "30d", "--all"]):
        done = await asyncio.to_thread(lovia_cli, "runs", "prune", "--db", str(path), *args)
        assert done.returncode == 2 and "hint:" in done.stderr, done.stderr
    assert await stored_runs(path) == everything
    dry = await asyncio.to_thread(
        lovia_cli, "runs", "prune", "--db", str(path), "--older-than", "30d", "--dry-run", "--json"
    )
    assert dry.returncode == 0, dry.stderr
    assert sorted(r["run_id"] for r in json.loads(dry.stdout)["would_prune"]) == [
        "old-done",
        "old-failed",
    ]
    assert await stored_runs(path) == everything
    done = await asyncio.to_thread(
        lovia_cli, "runs", "prune", "--db", str(path), "--older-than", "30d", "--json"
    )
    assert json.loads(done.stdout) == {"pruned": 2}
    assert await stored_runs(path) == ["new-done", "old-running"]
    done = await asyncio.to_thread(lovia_cli, "runs", "prune", "--db", str(path), "--all", "--json")
    assert json.loads(done.stdout) == {"pruned": 1}
    assert await stored_runs(path) == ["old-running"]


async def test_runs_delete_and_prune_leave_a_run_a_live_worker_holds(tmp_path: Path) -> None:
    """Issue 14, finding 12: the command line respects a live run's lease."""
    path = tmp_path / "app.db"
    await fill_runs(path)
    async with SQLiteCheckpointer(path, wal=True) as worker:
        assert await worker.acquire_lease("old-running", "worker-on-host-b", 30.0)
        assert await worker.acquire_lease("old-done", "worker-on-host-b", 30.0)
        delete = await asyncio.to_thread(
            lovia_cli, "runs", "delete", "old-running", "--db", str(path)
        )
        assert delete.returncode == 2, delete.stderr
        assert "worker-on-host-b" in delete.stderr and "hint:" in delete.stderr
        prune = await asyncio.to_thread(
            lovia_cli,
            *("runs", "prune", "--db", str(path), "--all", "--json"),
            *("--status", "running", "--status", "completed"),
        )
        assert json.loads(prune.stdout) == {"pruned": 1}  # new-done only
        assert await stored_runs(path) == ["old-done", "old-failed", "old-running"]
        await worker.release_lease("old-running", "worker-on-host-b")
        delete = await asyncio.to_thread(
            lovia_cli, "runs", "delete", "old-running", "--db", str(path)
        )
        assert delete.returncode == 0, delete.stderr
    assert await stored_runs(path) == ["old-done", "old-failed"]


def test_export_to_a_folder_and_an_id_that_is_not_text_are_errors_not_tracebacks(
    tmp_path: Path,
) -> None:
    """Issue 14, finding 15."""
    path = tmp_path / "app.db"
    asyncio.run(make_lovia_db(path, wal=True))
    export = lovia_cli("sessions", "export", "s1", "--db", str(path), "--out", str(tmp_path))
    assert export.returncode == 2 and "Traceback" not in export.stderr
    assert "hint:" in export.stderr
    show = lovia_cli("runs", "show", "a\udcffb", "--db", str(path))
    assert show.returncode == 2 and "Traceback" not in show.stderr, show.stderr
    assert "not valid Unicode" in show.stderr


def test_a_path_or_url_that_is_not_utf8_is_read_or_refused_not_a_traceback(
    tmp_path: Path,
) -> None:
    """Issue 14, finding 15: a file name with a byte that is not UTF-8 (``$'\\xff.db'`` in a
    shell) is a file like any other for the commands that only read; a PostgreSQL URL with
    one is a clear error."""
    path = tmp_path / "chats\udcff.db"  # the name the shell's byte 0xff becomes
    asyncio.run(make_lovia_db(path, wal=False))
    before = files(tmp_path)
    listed = lovia_cli("sessions", "list", "--db", str(path))
    shown = lovia_cli("runs", "show", "r1", "--db", str(path))
    assert listed.returncode == 0 and "s1" in listed.stdout, listed.stderr
    assert shown.returncode == 0 and "r1" in shown.stdout, shown.stderr
    assert files(tmp_path) == before
    url = "postgresql://postgres@127.0.0.1:5432/app\udcff"
    refused = lovia_cli("runs", "list", "--db", url)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert "not valid text" in refused.stderr and "hint:" in refused.stderr
