"""Damaged and foreign database files end in a clear ``SchemaError`` / ``StoreError`` with a
hint, and the file is left byte for byte as it was; a stored row that does not decode fails
loudly, naming the row, and never reads as empty (issue 9; S7, C1, schema versioning)."""

from __future__ import annotations

import os
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    Runner,
    SchemaError,
    SQLiteCheckpointer,
    SQLiteSession,
    StoreError,
)
from lovia.testing import ScriptedProvider, text

from .files import ENTRIES, file_bytes, filled, poke, rows


async def _session_load(path: Path) -> Any:
    async with SQLiteSession(path) as s:
        return await s.load("u1")


async def _checkpoint_load(path: Path) -> Any:
    async with SQLiteCheckpointer(path) as cp:
        return await cp.load("r1")


async def _session_append(path: Path) -> Any:
    async with SQLiteSession(path) as s:
        return await s.append("u1", ENTRIES, run_id="r2")


async def _checkpoint_append(path: Path) -> Any:
    from lovia import RunHead

    async with SQLiteCheckpointer(path) as cp:
        return await cp.append("r2", ENTRIES, RunHead(agent_name="a"))


OPERATIONS = [_session_load, _checkpoint_load, _session_append, _checkpoint_append]


def _png() -> bytes:
    """A valid 1x1 PNG image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = (1).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda f: f.__name__)
async def test_a_file_of_random_bytes_is_refused_and_left_unchanged(
    tmp_path: Path, operation: Any
) -> None:
    path = tmp_path / "noise.db"
    path.write_bytes(random.Random(9).randbytes(64 * 1024))
    before = file_bytes(path)
    with pytest.raises(SchemaError, match="not a SQLite database") as info:
        await operation(path)
    assert info.value.hint
    assert file_bytes(path) == before


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda f: f.__name__)
async def test_a_png_is_refused_and_left_unchanged(tmp_path: Path, operation: Any) -> None:
    path = tmp_path / "picture.png"
    path.write_bytes(_png())
    before = file_bytes(path)
    with pytest.raises(SchemaError, match="not a SQLite database"):
        await operation(path)
    assert file_bytes(path) == before


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda f: f.__name__)
async def test_another_applications_database_is_refused_and_left_unchanged(
    tmp_path: Path, operation: Any
) -> None:
    path = tmp_path / "crm.db"
    poke(path, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    poke(path, "INSERT INTO customers (name) VALUES (?)", "Ada")
    before = file_bytes(path)
    with pytest.raises(SchemaError, match=r"not a lovia database.*customers") as info:
        await operation(path)
    assert "new file" in (info.value.hint or "")
    assert file_bytes(path) == before


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda f: f.__name__)
async def test_a_truncated_database_fails_clearly_and_is_left_unchanged(
    tmp_path: Path, operation: Any
) -> None:
    path = tmp_path / "cut.db"
    await filled(path)
    # pad the data so the cut falls inside table pages, not only at the end of the file
    async with SQLiteSession(path) as s:
        for i in range(40):
            await s.append(f"pad{i}", ENTRIES * 20, run_id="p")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    before = file_bytes(path)
    with pytest.raises(StoreError) as info:
        await operation(path)
    assert info.value.hint
    assert file_bytes(path) == before


@pytest.mark.parametrize("component", ["session", "checkpoint"])
async def test_a_newer_schema_version_is_refused_and_left_unchanged(
    tmp_path: Path, component: str
) -> None:
    path = tmp_path / "future.db"
    await filled(path)
    poke(path, "UPDATE lovia_meta SET value = '99' WHERE key = ?", f"schema:{component}")
    before = file_bytes(path)
    operation = _session_load if component == "session" else _checkpoint_load
    with pytest.raises(SchemaError, match="version 99") as info:
        await operation(path)
    assert "upgrade lovia" in (info.value.hint or "")
    assert file_bytes(path) == before


@pytest.mark.parametrize(
    "stored",
    [
        "[{broken json",
        '[{"type": "mystery", "content": "?"}]',
        '[{"type": "tool_result", "call_id": "c1"}]',
        '{"not": "a list"}',
    ],
    ids=["corrupt-json", "unknown-type", "missing-field", "not-a-list"],
)
async def test_a_session_row_that_does_not_decode_fails_loudly_naming_it(
    tmp_path: Path, stored: str
) -> None:
    """Never an empty history: the error names the session and the run of the bad row."""
    path = tmp_path / "chat.db"
    await filled(path)
    poke(path, "UPDATE lovia_session_segments SET entries = ? WHERE run_id = 'r1'", stored)
    before = file_bytes(path)
    with pytest.raises(StoreError, match=r"session 'u1', run 'r1'") as info:
        await _session_load(path)
    assert info.value.hint
    assert file_bytes(path) == before


async def test_a_session_row_with_bad_meta_fails_loudly_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    await filled(path)
    poke(path, "UPDATE lovia_session_segments SET meta = '[1, 2]' WHERE run_id = 'r1'")
    with pytest.raises(StoreError, match=r"run 'r1'.*meta"):
        async with SQLiteSession(path) as s:
            await s.segments("u1")


@pytest.mark.parametrize(
    "stored",
    [b"[{broken", b'[{"type": "mystery"}]'],
    ids=["corrupt-json", "unknown-type"],
)
async def test_a_checkpoint_batch_that_does_not_decode_fails_loudly_naming_the_run(
    tmp_path: Path, stored: bytes
) -> None:
    path = tmp_path / "runs.db"
    await filled(path)
    poke(path, "UPDATE checkpoint_batches SET entries = ? WHERE seq = 1", stored)
    before = file_bytes(path)
    with pytest.raises(StoreError, match="run 'r1'") as info:
        await _checkpoint_load(path)
    assert "delete the run" in (info.value.hint or "")
    assert file_bytes(path) == before


async def test_a_checkpoint_head_that_does_not_decode_fails_loudly_naming_the_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    await filled(path)
    poke(path, "UPDATE checkpoint_runs SET head = ?", '{"status": "exploded"}')
    with pytest.raises(StoreError, match="run 'r1'"):
        await _checkpoint_load(path)


async def test_a_run_on_a_damaged_session_fails_before_calling_the_model(tmp_path: Path) -> None:
    """The model is never asked with a silently emptied history; nothing new is stored."""
    path = tmp_path / "chat.db"
    await filled(path)
    poke(path, "UPDATE lovia_session_segments SET entries = 'garbage' WHERE run_id = 'r1'")
    model = ScriptedProvider([text("I forgot everything")])
    agent = Agent("a", model=model)
    before = rows(path, "SELECT * FROM lovia_session_segments")
    async with SQLiteSession(path) as s, SQLiteCheckpointer(path) as cp:
        with pytest.raises(StoreError, match="run 'r1'"):
            await Runner.run(
                agent, "hi", session=s, session_id="u1", checkpoint=CheckpointOptions(cp, "r9")
            )
        failed = await cp.load("r9")
        assert failed is not None and failed.status == "failed" and failed.entries == []
    assert model.calls == []
    assert rows(path, "SELECT * FROM lovia_session_segments") == before


async def test_a_database_that_is_a_directory_fails_clearly(tmp_path: Path) -> None:
    path = tmp_path / "adir.db"
    os.mkdir(path)
    with pytest.raises(StoreError) as info:
        await _session_load(path)
    assert info.value.hint or "adir.db" in str(info.value)
