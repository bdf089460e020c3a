"""Wrong values given to the SQLite stores, found by the bad-input audit: each is refused
before any I/O with a ``UserError`` and a hint, of a class a 0.9.119 program's ``except``
still catches, and the file is left byte for byte as it was."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from lovia import InputEntry, RunHead, SQLiteCheckpointer, SQLiteSession, UserError


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("entries", ["hello", [1, 2], [{"type": "nonsense"}]])
async def test_entries_that_are_not_entries_are_a_type_error_and_write_nothing(
    tmp_path: Path, entries: Any
) -> None:
    # 0.9.119's stores raised TypeError here; this one raised a UserError that no
    # 'except TypeError' caught
    db = tmp_path / "app.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:
        await session.append("s1", [InputEntry(role="user", content="hi")], run_id="r0")
        await cp.append("r0", [InputEntry(role="user", content="hi")], RunHead("a"))
        before = digest(db)
        with pytest.raises(UserError) as info:
            await session.append("s1", entries, run_id="r1")
        assert isinstance(info.value, TypeError) and info.value.hint
        with pytest.raises(UserError) as info:
            await cp.append("r1", entries, RunHead("a"))
        assert isinstance(info.value, TypeError) and info.value.hint
        assert [s.run_id for s in await session.segments("s1")] == ["r0"]
        assert await cp.load("r1") is None
    assert digest(db) == before


def test_a_path_with_a_nul_character_says_so_with_a_hint(tmp_path: Path) -> None:
    # was a bare ValueError('embedded null byte') from deep inside the first call
    for store in (SQLiteSession, SQLiteCheckpointer):
        with pytest.raises(UserError) as info:
            store(str(tmp_path / "a\x00b.db"))
        assert isinstance(info.value, ValueError)
        assert "NUL" in info.value.message and info.value.hint
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("payload", ["[]", "5", '"run"'])
def test_a_snapshot_that_is_no_object_is_a_type_error_as_in_0_9_119(payload: str) -> None:
    # 0.9.119 raised TypeError here; this one raised AttributeError ('list' object has no
    # attribute 'get'), which no 'except TypeError' caught
    from lovia import RunSnapshot

    for kind in (RunSnapshot, RunHead):
        with pytest.raises(TypeError) as info:
            kind.from_json(payload)
        assert isinstance(info.value, UserError) and info.value.hint
