"""Lone surrogates and NUL: stored the same way on every backend, never a failed save
(issue 14, findings 5 and 8)."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import UserError
from lovia.checkpointer import RunHead
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry

from .backends import checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]

LONE = "caf\udcff"  # a terminal sent the byte 0xff, decoded with surrogateescape
ESCAPED = "caf\\udcff"


async def test_lone_surrogates_are_escaped_in_sessions(session: Any) -> None:
    entries = [
        InputEntry(content=LONE),
        ToolCallEntry(call_id="c1", name="ls", arguments='{"path": "' + LONE + '"}'),
        ToolResultEntry(call_id="c1", output=LONE + "\ud83d", raw={"name": LONE}),
    ]
    await session.append("s1", entries, run_id="r1", meta={"note": LONE})
    [segment] = await session.segments("s1")
    first, call, result = segment.entries
    assert isinstance(first, InputEntry) and first.content == ESCAPED
    assert isinstance(call, ToolCallEntry) and ESCAPED in call.arguments
    assert isinstance(result, ToolResultEntry) and result.output == ESCAPED + "\\ud83d"
    assert segment.meta == {"note": ESCAPED}
    [info] = await session.list_sessions()
    assert info.title == ESCAPED


async def test_nul_round_trips_in_entries_and_is_escaped_in_titles(session: Any) -> None:
    """PostgreSQL's text cannot hold NUL: the title column gets it escaped, the entries
    (JSON) keep it exactly, on every backend."""
    await session.append("s1", [InputEntry(content="a\x00b")], run_id="r1", meta={"k": "\x00"})
    [segment] = await session.segments("s1")
    assert segment.entries == [InputEntry(content="a\x00b")]
    assert segment.meta == {"k": "\x00"}
    [info] = await session.list_sessions()
    assert info.title == "a\\u0000b"


async def test_lone_surrogates_are_escaped_in_checkpoints(checkpointer: Any) -> None:
    head = RunHead("a", output=LONE, error={"message": LONE}, context_state={"k": LONE})
    await checkpointer.append("r1", [InputEntry(content=LONE)], head)
    snap = await checkpointer.load("r1")
    assert snap is not None
    assert snap.entries == [InputEntry(content=ESCAPED)]
    assert (snap.output, snap.error, snap.context_state) == (
        ESCAPED,
        {"message": ESCAPED},
        {"k": ESCAPED},
    )


async def test_nul_round_trips_in_checkpoints(checkpointer: Any) -> None:
    head = RunHead("a", output="x\x00y")
    await checkpointer.append("r1", [InputEntry(content="\x00")], head)
    snap = await checkpointer.load("r1")
    assert snap is not None and snap.output == "x\x00y"
    assert snap.entries == [InputEntry(content="\x00")]


@pytest.mark.parametrize("bad", ["a\udcffb", "\ud800"])
async def test_ids_with_lone_surrogates_are_refused_before_any_io(
    bad: str, session: Any, checkpointer: Any
) -> None:
    for attempt in (
        session.append(bad, [InputEntry(content="x")]),
        session.load(bad),
        checkpointer.append(bad, [], RunHead("a")),
        checkpointer.load(bad),
    ):
        with pytest.raises(UserError) as info:
            await attempt
        assert info.value.hint
