"""Listing runs by their heads only (issue 14, item 13): ``list_run_heads`` gives what
``list_runs`` gives minus the entries, on every backend, and finds one session's runs through
an index that the schema migration adds to new, version-1 and 0.9.119 files alike (only when
a store opens them for writing)."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lovia import InputEntry, RunHead, SQLiteCheckpointer
from lovia.errors import UserError
from lovia.stores.checkpoint import PendingApproval

from .backends import checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def head(status: str, session_id: str | None, at: float, **extra: Any) -> RunHead:
    return RunHead("a", status=status, session_id=session_id, updated_at=at, **extra)  # type: ignore[arg-type]


async def fill(cp: Any) -> None:
    approval = PendingApproval("c1", "pay", "{}", "d", requested_at=5.0)
    await cp.append("r1", [user("one"), user("two")], head("failed", "s1", 1.0))
    await cp.append("r1", [user("three")], head("failed", "s1", 4.0, error={"type": "X"}))
    await cp.append("r2", [user("x" * 5000)], head("completed", "s1", 2.0))
    await cp.append(
        "r3", [user("q")], head("interrupted", "s2", 3.0, pending_approvals=(approval,))
    )
    await cp.append("r4", [], head("running", None, 5.0))


async def test_heads_are_the_runs_without_their_entries(checkpointer: Any) -> None:
    await fill(checkpointer)
    runs = await checkpointer.list_runs()
    heads = await checkpointer.list_run_heads()
    assert [h.run_id for h in heads] == [r.run_id for r in runs] == ["r4", "r1", "r3", "r2"]
    assert [h.head for h in heads] == [r.head for r in runs]
    assert [h.entry_count for h in heads] == [len(r.entries) for r in runs] == [0, 3, 1, 1]
    r3 = heads[2]
    assert (r3.status, r3.session_id, r3.updated_at) == ("interrupted", "s2", 3.0)
    assert [p.call_id for p in r3.pending_approvals] == ["c1"]
    assert heads[1].error == {"type": "X"}


async def test_heads_filter_by_status_and_session_like_list_runs(checkpointer: Any) -> None:
    await fill(checkpointer)
    cases: list[dict[str, Any]] = [
        {"session_id": "s1"},
        {"session_id": "nobody"},
        {"statuses": ["failed", "interrupted"]},
        {"statuses": ["failed"], "session_id": "s2"},
        {"statuses": ["completed", "failed"], "session_id": "s1"},
        {"statuses": []},
    ]
    for kwargs in cases:
        heads = await checkpointer.list_run_heads(**kwargs)
        runs = await checkpointer.list_runs(**kwargs)
        assert [(h.run_id, h.head) for h in heads] == [(r.run_id, r.head) for r in runs], kwargs
    assert [h.run_id for h in await checkpointer.list_run_heads(session_id="s1")] == ["r1", "r2"]


async def test_heads_refuse_bad_arguments_clearly(checkpointer: Any) -> None:
    for kwargs in ({"statuses": "failed"}, {"statuses": ["done"]}, {"session_id": ""}):
        with pytest.raises(UserError) as info:
            await checkpointer.list_run_heads(**kwargs)
        assert info.value.hint


async def test_heads_are_copies(checkpointer: Any) -> None:
    await checkpointer.append("r", [user("x")], head("failed", "s", 1.0, error={"n": 1}))
    listed = await checkpointer.list_run_heads()
    assert listed[0].error is not None
    listed[0].error["n"] = 2
    again = await checkpointer.list_run_heads()
    assert again[0].error == {"n": 1}


# -- the session index, in SQLite files of every age ------------------------------------------


def _index_and_version(path: Path) -> tuple[list[str], str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = "
                "'checkpoint_runs' AND sql IS NOT NULL"
            )
        ]
        version = conn.execute(
            "SELECT value FROM lovia_meta WHERE key = 'schema:checkpoint'"
        ).fetchone()
    return names, version[0] if version else ""


def _plan(path: Path) -> str:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "EXPLAIN QUERY PLAN SELECT run_id FROM checkpoint_runs WHERE session_id = ?", ("s",)
        ).fetchall()
    return " ".join(str(r[-1]) for r in rows)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_new_file_has_the_session_index(tmp_path: Path) -> None:
    path = tmp_path / "cp.db"
    async with SQLiteCheckpointer(path) as cp:
        await fill(cp)
    assert _index_and_version(path) == (["checkpoint_runs_session"], "2")
    assert "checkpoint_runs_session" in _plan(path)


async def test_a_version_1_file_gets_the_index_when_opened_for_writing_only(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v1.db"
    shutil.copyfile(FIXTURES / "checkpoints-v1.sqlite", path)
    before = _digest(path)
    async with SQLiteCheckpointer(path, read_only=True) as cp:
        heads = await cp.list_run_heads(session_id="u1")
        assert [(h.run_id, h.status) for h in heads] == [("job-1", "completed")]
        assert [h.run_id for h in await cp.list_run_heads()] == [
            r.run_id for r in await cp.list_runs()
        ]
    assert _digest(path) == before  # reading never migrates
    assert _index_and_version(path) == ([], "1")

    async with SQLiteCheckpointer(path) as cp:
        assert [h.run_id for h in await cp.list_run_heads(session_id="u1")] == ["job-1"]
        snap = await cp.load("job-2")
        assert snap is not None and snap.entries
    assert _index_and_version(path) == (["checkpoint_runs_session"], "2")
    async with SQLiteCheckpointer(path) as cp:  # a second open finds nothing to do
        assert len(await cp.list_run_heads()) == 2
    assert _index_and_version(path) == (["checkpoint_runs_session"], "2")


async def test_a_0_9_119_file_reads_heads_as_it_is_and_migrates_with_the_index(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite"
    shutil.copyfile(FIXTURES / "v0_9_119.sqlite", path)
    before = _digest(path)
    async with SQLiteCheckpointer(path, read_only=True) as cp:
        read_only = [(h.run_id, h.head, h.entry_count) for h in await cp.list_run_heads()]
        full = [(r.run_id, r.head, len(r.entries)) for r in await cp.list_runs()]
    assert read_only == full and read_only
    assert _digest(path) == before

    async with SQLiteCheckpointer(path) as cp:
        migrated = [(h.run_id, h.head, h.entry_count) for h in await cp.list_run_heads()]
    assert migrated == read_only
    assert _index_and_version(path) == (["checkpoint_runs_session"], "2")


# -- the session index in PostgreSQL ----------------------------------------------------------


async def test_a_version_1_postgres_database_gets_the_index_on_open_for_writing() -> None:
    import psycopg

    from lovia import PostgresCheckpointer

    from .pg import drop_prefix, fresh_prefix, postgres_dsn

    dsn = postgres_dsn()
    prefix = fresh_prefix()
    script = (FIXTURES / "postgres-v1.sql").read_text().replace("v1fixture_", prefix)

    def state() -> tuple[list[str], str]:
        with psycopg.connect(dsn) as conn:
            indexes = conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE tablename = %s",
                (f"{prefix}checkpoint_runs",),
            ).fetchall()
            version = conn.execute(
                f"SELECT value FROM \"{prefix}meta\" WHERE key = 'schema:checkpoint'"
            ).fetchone()
        return [str(r[0]) for r in indexes if "(session_id)" in str(r[0])], str(version[0])

    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(script.encode())
        async with PostgresCheckpointer(dsn, table_prefix=prefix, read_only=True) as cp:
            listed = await cp.list_run_heads()
            assert [h.run_id for h in listed] == [r.run_id for r in await cp.list_runs()]
        assert state() == ([], "1")
        async with PostgresCheckpointer(dsn, table_prefix=prefix) as cp:
            assert [h.run_id for h in await cp.list_run_heads()] == [h.run_id for h in listed]
        indexes, version = state()
        assert len(indexes) == 1 and version == "3"
    finally:
        drop_prefix(dsn, prefix)


async def test_a_run_saved_under_another_session_is_listed_under_that_one(
    checkpointer: Any,
) -> None:
    await checkpointer.append("r", [user("x")], head("running", "s1", 1.0))
    await checkpointer.append("r", [user("y")], head("running", "s1", 2.0))
    await checkpointer.append("r", [user("z")], head("failed", "s2", 3.0))
    assert await checkpointer.list_run_heads(session_id="s1") == []
    [moved] = await checkpointer.list_run_heads(session_id="s2")
    assert (moved.run_id, moved.status, moved.entry_count) == ("r", "failed", 3)
    assert [r.run_id for r in await checkpointer.list_runs(session_id="s2")] == ["r"]
    await checkpointer.append("r", [], head("failed", None, 4.0))
    assert await checkpointer.list_run_heads(session_id="s2") == []
    assert [r.session_id for r in await checkpointer.list_run_heads()] == [None]
