"""SQLiteSession beyond the contract: the file format, refusals, WAL and several processes."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lovia import (
    AssistantTextEntry,
    InputEntry,
    SchemaError,
    Segment,
    SessionConflict,
    StoreError,
    ToolCallEntry,
    ToolResultEntry,
    UserError,
)
from lovia.stores.sqlite_session import SQLiteSession


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def raw(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Run SQL on the file directly, as another program (or damage) would."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(sql, params).fetchall()
        conn.commit()
        return rows
    finally:
        conn.close()


async def make_store(path: Path) -> None:
    async with SQLiteSession(path) as s:
        await s.append("s", [user("hi")], run_id="r1")


async def test_schema_version_is_recorded_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    await make_store(path)
    assert raw(path, "SELECT value FROM lovia_meta WHERE key = 'schema:session'") == [("1",)]


@pytest.mark.parametrize("wal", [False, True])
async def test_a_newer_schema_is_refused_and_the_file_left_unchanged(
    tmp_path: Path, wal: bool
) -> None:
    path = tmp_path / "chat.db"
    await make_store(path)
    raw(path, "UPDATE lovia_meta SET value = '99' WHERE key = 'schema:session'")
    before = path.read_bytes()
    store = SQLiteSession(path, wal=wal)
    with pytest.raises(SchemaError) as info:
        await store.load("s")
    await store.close()
    assert "version 99" in str(info.value) and info.value.hint
    assert path.read_bytes() == before


@pytest.mark.parametrize("wal", [False, True])
async def test_a_sqlite_file_of_another_program_is_refused_unchanged(
    tmp_path: Path, wal: bool
) -> None:
    path = tmp_path / "other.db"
    raw(path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    raw(path, "INSERT INTO invoices (total) VALUES (12.5)")
    before = path.read_bytes()
    store = SQLiteSession(path, wal=wal)
    with pytest.raises(SchemaError) as info:
        await store.append("s", [user("hi")])
    await store.close()
    assert "not a lovia database" in str(info.value)
    assert path.read_bytes() == before


async def test_a_file_that_is_not_sqlite_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(os.urandom(4096))
    before = path.read_bytes()
    store = SQLiteSession(path)
    with pytest.raises(SchemaError):
        await store.segments("s")
    await store.close()
    assert path.read_bytes() == before


async def test_wal_true_switches_the_file_to_wal(tmp_path: Path) -> None:
    """S12: wal=True means WAL journal mode; the default leaves the journal alone."""
    plain, shared = tmp_path / "plain.db", tmp_path / "shared.db"
    async with SQLiteSession(plain) as a, SQLiteSession(shared, wal=True) as b:
        await a.append("s", [user("hi")])
        await b.append("s", [user("hi")])
    assert raw(plain, "PRAGMA journal_mode") == [("delete",)]
    assert raw(shared, "PRAGMA journal_mode") == [("wal",)]


async def test_a_new_instance_on_the_file_sees_everything(tmp_path: Path) -> None:
    """S7: the session survives the store (and the process); str and Path name one file."""
    path = tmp_path / "chat.db"
    async with SQLiteSession(str(path)) as first:
        await first.append("s", [user("my project is Atlas")], run_id="r1", meta={"m": [1]})
    async with SQLiteSession(path) as second:
        assert await second.segments("s") == [
            Segment("r1", [user("my project is Atlas")], {"m": [1]})
        ]


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ('[{"type": "input", "role": "user", "content": "hi"', "broken JSON"),
        ('[{"type": "telepathy", "content": "hi"}]', "unknown entry type"),
        ('[{"type": "tool_result", "call_id": "c1"}]', "missing field"),
    ],
)
async def test_a_row_that_does_not_decode_names_its_session_and_run(
    tmp_path: Path, stored: str, why: str
) -> None:
    """A damaged row raises StoreError naming session and run; it is never silently dropped."""
    path = tmp_path / "chat.db"
    async with SQLiteSession(path) as s:
        await s.append("user-7", [user("fine")], run_id="good")
        await s.append("user-7", [user("soon broken")], run_id="bad-run")
    raw(path, "UPDATE lovia_session_segments SET entries = ? WHERE run_id = 'bad-run'", (stored,))
    async with SQLiteSession(path) as s:
        for read in (s.segments, s.load):
            with pytest.raises(StoreError) as info:
                await read("user-7")
            assert "user-7" in str(info.value) and "bad-run" in str(info.value), why
        with pytest.raises(StoreError):
            await s.rewind("user-7", keep_entries=0)
    # the failed rewind changed nothing
    assert raw(path, "SELECT run_id FROM lovia_session_segments ORDER BY seq") == [
        ("good",),
        ("bad-run",),
    ]


async def test_meta_that_is_not_json_is_refused_and_nothing_stored(tmp_path: Path) -> None:
    async with SQLiteSession(tmp_path / "chat.db") as s:
        with pytest.raises(UserError):
            await s.append("s", [user("hi")], run_id="r1", meta={"when": object()})
        assert await s.segments("s") == []


async def test_concurrent_appends_of_one_run_store_one_segment(tmp_path: Path) -> None:
    """S5: the unique key holds across store instances writing at once."""
    path = tmp_path / "chat.db"
    stores = [SQLiteSession(path, wal=True) for _ in range(4)]
    try:
        ids = await asyncio.gather(
            *(s.append("s", [user(f"from {i}")], run_id="same") for i, s in enumerate(stores))
        )
        assert ids == ["same"] * 4
        assert len(await stores[0].segments("s")) == 1
    finally:
        for s in stores:
            await s.close()


async def test_a_closed_store_refuses_calls(tmp_path: Path) -> None:
    store = SQLiteSession(tmp_path / "chat.db")
    async with store:
        await store.append("s", [user("hi")])
    with pytest.raises(UserError):
        await store.load("s")


def test_a_path_that_is_not_a_path_is_refused() -> None:
    with pytest.raises(UserError):
        SQLiteSession(42)  # type: ignore[arg-type]


WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from lovia import AssistantTextEntry, InputEntry
    from lovia.stores.sqlite_session import SQLiteSession

    async def main(path, name, runs):
        async with SQLiteSession(path, wal=True) as s:
            for i in range(runs):
                entries = [InputEntry(content=f"{name} {i}"), AssistantTextEntry(content="ok")]
                await s.append(name, entries, run_id=f"{name}-{i}")
                # both processes also append the same run of one shared session (S5)
                await s.append("shared", entries, run_id=f"shared-{i % 10}")

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


async def _read_back(path: Path) -> dict[str, list[Segment]]:
    async with SQLiteSession(path, wal=True) as s:
        return {name: await s.segments(name) for name in ("alice", "bob", "shared")}


@pytest.mark.slow
def test_two_processes_append_to_one_wal_file(tmp_path: Path) -> None:
    """S12: two OS processes, 200 runs each, one wal=True file: no errors, all 400 stored."""
    path = tmp_path / "shared.db"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), name, "200"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("alice", "bob")
    ]
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    stored = asyncio.run(_read_back(path))
    for name in ("alice", "bob"):
        segments = stored[name]
        assert [seg.run_id for seg in segments] == [f"{name}-{i}" for i in range(200)]
        assert segments[199].entries == [
            InputEntry(content=f"{name} 199"),
            AssistantTextEntry(content="ok"),
        ]
    # the shared runs were appended by both processes and stored once each (S5)
    assert sorted(seg.run_id for seg in stored["shared"]) == [f"shared-{i}" for i in range(10)]


async def test_a_store_sees_every_change_another_store_makes_to_the_file(tmp_path: Path) -> None:
    """S7/S12: what one store decoded before never hides appends, trims, rewinds or clears
    made through another store (or process) on the same file."""
    path = tmp_path / "chat.db"
    async with SQLiteSession(path, wal=True) as reader, SQLiteSession(path, wal=True) as writer:
        big = ToolResultEntry(call_id="c1", output="x" * 500)
        run1 = [user("one"), ToolCallEntry(call_id="c1", name="t"), big]
        await writer.append("s", run1, run_id="r1")
        assert await reader.load("s") == run1
        await writer.append("s", [user("two")], run_id="r2")
        assert [s.run_id for s in await reader.segments("s")] == ["r1", "r2"]
        assert await writer.trim_tool_results("s", keep_chars=5, keep_runs=1) == 1
        trimmed = (await reader.load("s"))[2]
        assert isinstance(trimmed, ToolResultEntry) and trimmed.output.startswith("xxxxx\n[")
        await writer.rewind("s", keep_entries=3)
        assert [s.run_id for s in await reader.segments("s")] == ["r1"]
        await writer.append("s", [user("three")], run_id="r3")
        await writer.rewind("s", keep_entries=3)
        await writer.append("s", [user("four")], run_id="r4")
        assert [s.run_id for s in await reader.segments("s")] == ["r1", "r4"]
        await writer.clear("s")
        assert await reader.load("s") == []
        await writer.append("s", [user("five")], run_id="r5")
        assert await reader.load("s") == [user("five")]


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


async def test_a_file_written_by_schema_version_1_still_reads(tmp_path: Path) -> None:
    """Persisted formats are versioned: a frozen version-1 file opens (and migrates) intact."""
    path = tmp_path / "old.sqlite"
    path.write_bytes((FIXTURES / "sessions-v1.sqlite").read_bytes())
    async with SQLiteSession(path) as s:
        segments = await s.segments("u1")
        assert [seg.run_id for seg in segments] == ["run-1", "run-2"]
        assert segments[0].meta == {"context_state": {"v": 1}}
        assert segments[0].entries[0] == user("My project is called Atlas.")
        assert [e.type for e in segments[1].entries] == [
            "input",
            "reasoning",
            "tool_call",
            "tool_result",
            "assistant_text",
        ]
        assert await s.load("u2") == [user("other")]
        assert await s.rewind("u1", keep_entries=2) == 5


async def test_a_version_1_file_has_session_versions_for_its_sessions(tmp_path: Path) -> None:
    """The revision row a version-1 file keeps per session is the session's version
    (issue 9): an append at it lands, one at an older version is refused, and the file's
    schema stays readable by the lovia that wrote it."""
    path = tmp_path / "old.sqlite"
    path.write_bytes((FIXTURES / "sessions-v1.sqlite").read_bytes())
    async with SQLiteSession(path) as s:
        history = await s.history("u1")
        assert [seg.run_id for seg in history.segments] == ["run-1", "run-2"]
        assert history.version == 2 and (await s.history("u2")).version == 1
        with pytest.raises(SessionConflict):
            await s.append("u1", [user("stale")], run_id="run-3", expected_version=1)
        await s.append("u1", [user("fresh")], run_id="run-3", expected_version=2)
        assert (await s.history("u1")).version == 3
    with sqlite3.connect(path) as conn:
        assert conn.execute(
            "SELECT value FROM lovia_meta WHERE key = 'schema:session'"
        ).fetchone() == ("1",)


async def test_segments_read_back_are_plain_segment_values_each_with_its_own_meta(
    tmp_path: Path,
) -> None:
    """Meta is parsed when read; a caller changing its copy changes nothing stored."""
    store = SQLiteSession(tmp_path / "s.db")
    await store.append("s", [user("a")], run_id="r1", meta={"n": {"k": [1]}})
    await store.append("s", [user("b")], run_id="r2")
    first = await store.segments("s")
    assert first == [
        Segment("r1", [user("a")], {"n": {"k": [1]}}),
        Segment("r2", [user("b")], None),
    ]
    assert Segment("r1", [user("a")], {"n": {"k": [1]}}) == first[0]
    assert first[0] != Segment("r1", [user("a")], {"n": {"k": [2]}})
    assert repr(first[1]) == repr(Segment("r2", [user("b")], None))
    assert first[0].meta is not None
    first[0].meta["n"]["k"].append(2)
    first[0].entries.append(user("c"))
    again = (await store.history("s")).segments
    assert again[0].meta == {"n": {"k": [1]}} and again[0].entries == [user("a")]
    loaded = await store.load("s")
    loaded.append(user("d"))
    assert await store.load("s") == [user("a"), user("b")]
