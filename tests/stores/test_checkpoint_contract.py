"""The checkpointer contract beyond the conformance kit (C1-C3, C13 edges; SQLite files), run
against every backend in ``BACKENDS``; the promises any store keeps are
``lovia.testing.conformance``'s, run by ``test_conformance_kit.py``."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from lovia import (
    AssistantTextEntry,
    Checkpointer,
    InputEntry,
    ReasoningEntry,
    RunHead,
    SchemaError,
    SQLiteCheckpointer,
    StoreError,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UserError,
)
from tests.stores.backends import Backend, checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def head(**overrides: object) -> RunHead:
    values: dict[str, object] = {"agent_name": "worker"}
    values.update(overrides)
    return RunHead(**values)  # type: ignore[arg-type]


# -- the protocol, on every backend -------------------------------------------------------


async def test_append_with_no_entries_only_replaces_the_head(checkpointer: Checkpointer) -> None:
    """C3: a head-only save (e.g. the status change) keeps every entry."""
    await checkpointer.append("r", [user("a")], head())
    await checkpointer.append("r", [], head(status="interrupted", turns=3))
    snap = await checkpointer.load("r")
    assert snap is not None
    assert snap.entries == [user("a")]
    assert (snap.status, snap.turns) == ("interrupted", 3)


async def test_runs_are_kept_apart_by_run_id(checkpointer: Checkpointer) -> None:
    """C5: run_id is the only key; two ids are two runs."""
    await checkpointer.append("a", [user("for a")], head(agent_name="A"))
    await checkpointer.append("b", [user("for b")], head(agent_name="B"))
    a, b = await checkpointer.load("a"), await checkpointer.load("b")
    assert a is not None and b is not None
    assert (a.entries, a.agent_name) == ([user("for a")], "A")
    assert (b.entries, b.agent_name) == ([user("for b")], "B")


async def test_every_entry_type_round_trips(checkpointer: Checkpointer) -> None:
    entries: list[TranscriptEntry] = [
        InputEntry(role="user", content=[{"type": "text", "text": "look"}]),
        ReasoningEntry(content="think", id="r1", provider="x", metadata={"sig": "abc"}),
        AssistantTextEntry(content="text with \u2603 and \n newlines", id="m1"),
        ToolCallEntry(call_id="c1", name="lookup", arguments='{"q": "\\"quoted\\""}'),
        ToolResultEntry(call_id="c1", output="", is_error=True),
    ]
    await checkpointer.append("r", entries, head())
    snap = await checkpointer.load("r")
    assert snap is not None
    assert snap.entries == entries


@pytest.mark.parametrize("bad", ["", "x" * 513, 42])
async def test_bad_run_id_is_a_user_error(checkpointer: Checkpointer, bad: object) -> None:
    with pytest.raises(UserError):
        await checkpointer.append(bad, [user("x")], head())  # type: ignore[arg-type]
    with pytest.raises(UserError):
        await checkpointer.load(bad)  # type: ignore[arg-type]


async def test_list_runs_is_newest_first_and_filters_by_status(
    checkpoint_backend: Backend,
) -> None:
    """The built-in backends list their runs (for `lovia runs` and the web UI)."""
    cp = checkpoint_backend.open()
    await cp.append("old", [user("1")], head(status="completed", updated_at=100.0))
    await cp.append("mid", [user("2")], head(status="interrupted", updated_at=200.0))
    await cp.append("new", [user("3")], head(status="running", updated_at=300.0))
    await cp.append("old", [], head(status="completed", updated_at=150.0))
    runs = await cp.list_runs()  # type: ignore[attr-defined]
    assert [r.run_id for r in runs] == ["new", "mid", "old"]
    pending = await cp.list_runs(statuses=["running", "interrupted"])  # type: ignore[attr-defined]
    assert {r.run_id for r in pending} == {"mid", "new"}
    assert [e for r in pending for e in r.entries] != []


# -- SQLite extras -----------------------------------------------------------------------


def _tables(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT key, value FROM lovia_meta").fetchall())


async def test_sqlite_records_its_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "cp.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.append("r", [user("x")], head())
    assert _tables(path)["schema:checkpoint"] == "2"


async def test_sqlite_refuses_a_newer_schema_and_leaves_the_file_unchanged(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cp.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.append("r", [user("x")], head())
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE lovia_meta SET value = '99' WHERE key = 'schema:checkpoint'")
    before = path.read_bytes()
    async with SQLiteCheckpointer(path) as cp:
        with pytest.raises(SchemaError) as info:
            await cp.load("r")
        assert info.value.hint
    assert path.read_bytes() == before


async def test_sqlite_refuses_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes, not a database")
    async with SQLiteCheckpointer(str(path)) as cp:
        with pytest.raises(SchemaError):
            await cp.load("r")
    assert path.read_text() == "my notes, not a database"


async def test_sqlite_wal_switches_the_journal_mode(tmp_path: Path) -> None:
    """C13/S12: wal=True means WAL journal mode; the default is off."""
    wal_path, plain_path = tmp_path / "wal.db", tmp_path / "plain.db"
    async with SQLiteCheckpointer(wal_path, wal=True) as cp:
        await cp.append("r", [user("x")], head())
    async with SQLiteCheckpointer(plain_path) as cp:
        await cp.append("r", [user("x")], head())
    with sqlite3.connect(wal_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with sqlite3.connect(plain_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


async def test_sqlite_save_never_rewrites_earlier_entries(tmp_path: Path) -> None:
    """Design: a save inserts one batch row; rows written before stay byte-for-byte."""
    path = tmp_path / "cp.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.append("r", [user("first")], head())
        with sqlite3.connect(path) as conn:
            first = conn.execute("SELECT seq, entries FROM checkpoint_batches").fetchall()
        for i in range(5):
            await cp.append("r", [AssistantTextEntry(content=f"t{i}")], head(turns=i))
        await cp.append("r", [], head(status="completed"))
        with sqlite3.connect(path) as conn:
            rows = conn.execute(
                "SELECT seq, entries FROM checkpoint_batches ORDER BY seq"
            ).fetchall()
    assert len(rows) == 6
    assert rows[0] == first[0]


async def test_sqlite_damaged_batch_is_a_store_error_naming_the_run(tmp_path: Path) -> None:
    path = tmp_path / "cp.db"
    async with SQLiteCheckpointer(path) as cp:
        await cp.append("job-7", [user("x")], head())
    with sqlite3.connect(path) as conn:
        conn.execute('UPDATE checkpoint_batches SET entries = \'[{"type": "nope"}]\'')
    async with SQLiteCheckpointer(path) as cp:
        with pytest.raises(StoreError, match="job-7") as info:
            await cp.load("job-7")
    assert info.value.hint


async def test_sqlite_head_that_is_not_json_fails_with_nothing_written(tmp_path: Path) -> None:
    async with SQLiteCheckpointer(tmp_path / "cp.db") as cp:
        await cp.append("r", [user("x")], head())
        with pytest.raises(StoreError, match="JSON"):
            await cp.append("r", [user("y")], head(output={1, 2}))
        snap = await cp.load("r")
    assert snap is not None and snap.entries == [user("x")]


async def test_sqlite_closed_store_is_a_user_error(tmp_path: Path) -> None:
    cp = SQLiteCheckpointer(tmp_path / "cp.db")
    await cp.append("r", [user("x")], head())
    await cp.close()
    with pytest.raises(UserError):
        await cp.load("r")


async def test_sqlite_list_runs_rejects_unknown_statuses(tmp_path: Path) -> None:
    async with SQLiteCheckpointer(tmp_path / "cp.db") as cp:
        with pytest.raises(UserError):
            await cp.list_runs(statuses=["done"])
        assert await cp.list_runs(statuses=[]) == []


async def test_sqlite_shares_one_file_with_the_session_store(tmp_path: Path) -> None:
    """C1/S12: a session and a checkpointer may live in one file, each with its schema."""
    sqlite_session = pytest.importorskip("lovia.stores.sqlite_session")
    path = tmp_path / "app.db"
    session = sqlite_session.SQLiteSession(path, wal=True)
    cp = SQLiteCheckpointer(path, wal=True)
    try:
        await session.append("s1", [user("in the session")], run_id="r1")
        await cp.append("r1", [user("in the checkpoint")], head())
        assert await session.load("s1") == [user("in the session")]
        snap = await cp.load("r1")
        assert snap is not None and snap.entries == [user("in the checkpoint")]
    finally:
        await session.close()
        await cp.close()
    meta = _tables(path)
    assert meta["schema:checkpoint"] == "2"
    assert "schema:session" in meta


async def test_concurrent_saves_of_many_runs_keep_each_run_in_order(
    checkpointer: Checkpointer,
) -> None:
    """C2/C5: one store shared by many runs at once; each run sees only its own saves, in order."""

    async def drive(run: int) -> None:
        for step in range(15):
            await checkpointer.append(f"run-{run}", [user(f"{run}:{step}")], head(turns=step))

    await asyncio.gather(*(drive(r) for r in range(12)))
    for r in range(12):
        snap = await checkpointer.load(f"run-{r}")
        assert snap is not None
        assert snap.entries == [user(f"{r}:{s}") for s in range(15)]
        assert snap.turns == 14


async def test_a_large_tool_output_round_trips(checkpointer: Checkpointer) -> None:
    """Tool outputs up to the 200,000-character default limit are stored whole."""
    big = "".join(chr(0x41 + i % 26) for i in range(200_000)) + "\u00e9\u4e2d"
    entries: list[TranscriptEntry] = [
        ToolCallEntry(call_id="c", name="dump", arguments="{}"),
        ToolResultEntry(call_id="c", output=big),
    ]
    await checkpointer.append("r", entries[:1], head())
    await checkpointer.append("r", entries[1:], head(turns=1))
    await checkpointer.append("r", [AssistantTextEntry(content="ok")], head(turns=2))
    snap = await checkpointer.load("r")
    assert snap is not None
    assert snap.entries == [*entries, AssistantTextEntry(content="ok")]
