"""A SQLite store given a path of the wrong type says what to pass (S1, C1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession, UserError


@pytest.mark.parametrize("cls", [SQLiteSession, SQLiteCheckpointer])
@pytest.mark.parametrize("bad", [123, None, b"chat.db"])
def test_a_path_that_is_not_text_is_a_type_error_with_a_hint(
    cls: type, bad: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S1/C1: ``SQLiteSession(path)`` / ``SQLiteCheckpointer(path)`` take a str or a Path.
    Anything else is refused with a ``UserError`` that is also a ``TypeError`` and carries a
    hint, and no file is created (0.9.119 made a file named ``123``)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as info:
        cls(bad)
    assert isinstance(info.value, TypeError)
    assert info.value.hint and "chat.db" in info.value.hint
    assert os.listdir(tmp_path) == []
