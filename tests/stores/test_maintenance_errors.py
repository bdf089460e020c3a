"""Bad arguments to session maintenance: our UserError with a hint, which is also the
ValueError (a negative count) or TypeError (not a whole number) that code written for lovia
0.9.119 catches (issue 12). Nothing is changed by a refused call."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import InputEntry, ToolCallEntry, ToolResultEntry, UserError
from lovia.errors import UserTypeError, UserValueError

CALLS = [
    ("trim_tool_results", {"keep_chars": -1}, "keep_chars"),
    ("trim_tool_results", {"keep_runs": -1}, "keep_runs"),
    ("rewind", {"keep_entries": -1}, "keep_entries"),
]


async def _seed(session: Any) -> list[Any]:
    entries = [
        InputEntry(role="user", content="look it up"),
        ToolCallEntry(call_id="c1", name="search", arguments="{}"),
        ToolResultEntry(call_id="c1", name="search", output="r" * 2000),
    ]
    await session.append("s", entries, run_id="r1")
    await session.append("s", [InputEntry(role="user", content="next")], run_id="r2")
    return list(await session.load("s"))


@pytest.mark.parametrize(("method", "kwargs", "name"), CALLS)
async def test_a_negative_count_is_a_user_error_and_a_value_error(
    session: Any, method: str, kwargs: dict[str, int], name: str
) -> None:
    before = await _seed(session)

    for kind in (UserError, ValueError, UserValueError):
        with pytest.raises(kind, match=name) as info:
            await getattr(session, method)("s", **kwargs)
        assert isinstance(info.value, UserError) and isinstance(info.value, ValueError)
        assert info.value.hint is not None and name in info.value.hint

    assert list(await session.load("s")) == before


@pytest.mark.parametrize("bad", ["400", 1.5, True, None])
async def test_a_count_that_is_not_a_whole_number_is_a_user_error_and_a_type_error(
    session: Any, bad: object
) -> None:
    before = await _seed(session)

    for kind in (UserError, TypeError, UserTypeError):
        with pytest.raises(kind, match="keep_chars") as info:
            await session.trim_tool_results("s", keep_chars=bad)
        assert info.value.hint is not None

    assert list(await session.load("s")) == before
