"""rewind and trim_tool_results on every built-in store, checked against the page's own words
at every cut point, not against another store.

The page: ``keep_entries`` counts the flat ``load()`` view; runs wholly after the cut are
deleted; a run the cut falls inside is truncated, its tool calls whose results were cut away
go with it, and its ``meta`` is cleared; ``0`` empties the session; at or past the end nothing
happens; the return value counts every entry removed. Trim: every run but the last
``keep_runs`` has its outputs cut to ``keep_chars`` characters plus a marker saying how many
were cut; structure, order and call ids stay; a second call trims nothing.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from lovia import Segment, UserError
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
)

SID = "oracle"


def _runs() -> list[Segment]:
    """Three runs: a parallel batch answered out of order, a lone call, and a run whose last
    call never got its result (a partial the caller wrote after a stop)."""
    return [
        Segment(
            "run-a",
            [
                InputEntry(role="user", content="compare"),
                ReasoningEntry(content="two lookups", id=None, provider=None, metadata={}),
                ToolCallEntry(call_id="a1", name="look", arguments='{"q": 1}'),
                ToolCallEntry(call_id="a2", name="look", arguments='{"q": 2}'),
                ToolResultEntry(call_id="a2", output="second " * 120),
                ToolResultEntry(call_id="a1", output="first " * 150, is_error=True),
                AssistantTextEntry(content="both done", id="m1"),
            ],
            {"context_state": {"run": "a"}},
        ),
        Segment(
            "run-b",
            [
                InputEntry(role="user", content="one more"),
                ToolCallEntry(call_id="b1", name="look", arguments="{}"),
                ToolResultEntry(call_id="b1", output="ß😀" * 300),
                AssistantTextEntry(content="ok", id=None),
            ],
            {"context_state": {"run": "b"}, "other": [1, 2]},
        ),
        Segment(
            "run-c",
            [
                InputEntry(role="user", content="last"),
                AssistantTextEntry(content="thinking aloud", id=None),
                ToolCallEntry(call_id="c1", name="look", arguments="{}"),
                ToolResultEntry(call_id="c1", output="tail " * 100),
            ],
            None,
        ),
    ]


async def _fill(session: Any) -> None:
    await session.clear(SID)
    for seg in _runs():
        await session.append(SID, list(seg.entries), run_id=seg.run_id, meta=seg.meta)


def _expected_rewind(keep: int) -> tuple[list[Segment], int]:
    runs = _runs()
    total = sum(len(s.entries) for s in runs)
    if keep >= total:
        return runs, 0
    out: list[Segment] = []
    seen = 0
    for seg in runs:
        if seen + len(seg.entries) <= keep:
            out.append(seg)
            seen += len(seg.entries)
            continue
        left = keep - seen
        if left > 0:
            kept = list(seg.entries[:left])
            answered = {e.call_id for e in kept if isinstance(e, ToolResultEntry)}
            kept = [e for e in kept if not isinstance(e, ToolCallEntry) or e.call_id in answered]
            out.append(Segment(seg.run_id, kept, None))
        break
    return out, total - sum(len(s.entries) for s in out)


def _shape(segments: list[Segment]) -> list[tuple[str, list[Any], Any]]:
    return [(s.run_id, list(s.entries), s.meta) for s in segments]


async def test_rewind_at_every_cut_point_does_what_the_page_says(stores: Any) -> None:
    session, _ = stores
    total = sum(len(s.entries) for s in _runs())
    for keep in range(total + 3):
        await _fill(session)
        expected, removed = _expected_rewind(keep)
        got = await session.rewind(SID, keep_entries=keep)
        assert got == removed, keep
        segments = await session.segments(SID)
        assert _shape(segments) == _shape(expected), keep
        flat = await session.load(SID)
        assert flat == [e for s in expected for e in s.entries], keep
        # a well-formed transcript: every call that is left has its result
        results = {e.call_id for e in flat if isinstance(e, ToolResultEntry)}
        assert all(e.call_id in results for e in flat if isinstance(e, ToolCallEntry))
        # doing it again changes nothing
        assert await session.rewind(SID, keep_entries=keep) == 0 or keep == 0
        assert _shape(await session.segments(SID)) == _shape(expected)


async def test_a_rewound_session_takes_new_runs_and_old_run_ids_again(stores: Any) -> None:
    """Runs the cut deleted are gone whole: their run ids may be appended again (edit and
    resend writes a new run after the cut) and idempotency still holds for the ones kept."""
    session, _ = stores
    await _fill(session)
    await session.rewind(SID, keep_entries=7)
    assert (
        await session.append(SID, [InputEntry(role="user", content="x")], run_id="run-a") == "run-a"
    )
    assert [s.run_id for s in await session.segments(SID)] == ["run-a"]
    new = [InputEntry(role="user", content="edited"), AssistantTextEntry(content="new", id=None)]
    assert await session.append(SID, new, run_id="run-b") == "run-b"
    segments = await session.segments(SID)
    assert [s.run_id for s in segments] == ["run-a", "run-b"]
    assert segments[1].entries == new and segments[1].meta is None


_MARKER = re.compile(r"(\d[\d,]*)")


@pytest.mark.parametrize(("keep_chars", "keep_runs"), [(0, 0), (10, 1), (50, 2), (400, 0), (5, 9)])
async def test_trim_cuts_exactly_the_old_runs_outputs(
    stores: Any, keep_chars: int, keep_runs: int
) -> None:
    session, _ = stores
    await _fill(session)
    runs = _runs()
    trimmed_runs = runs[: max(len(runs) - keep_runs, 0)]
    count = await session.trim_tool_results(SID, keep_chars=keep_chars, keep_runs=keep_runs)
    after = await session.segments(SID)
    assert [(s.run_id, s.meta) for s in after] == [(s.run_id, s.meta) for s in runs]
    changed = 0
    for old, new in zip(runs, after, strict=True):
        assert len(old.entries) == len(new.entries)
        for before, now in zip(old.entries, new.entries, strict=True):
            if not isinstance(before, ToolResultEntry):
                assert now == before
                continue
            assert isinstance(now, ToolResultEntry)
            assert (now.call_id, now.is_error) == (before.call_id, before.is_error)
            if now.output == before.output:
                # left alone: a kept run, a short output, or one the marker would not shorten
                assert (
                    old not in trimmed_runs
                    or len(before.output) <= keep_chars
                    or len(before.output) < keep_chars + 200
                ), (old.run_id, len(before.output))
                continue
            changed += 1
            assert old in trimmed_runs
            assert len(now.output) < len(before.output)
            assert now.output.startswith(before.output[:keep_chars])
            marker = now.output[keep_chars:]
            cut = len(before.output) - keep_chars
            numbers = [int(n.replace(",", "")) for n in _MARKER.findall(marker)]
            assert cut in numbers, marker
    assert count == changed
    if keep_chars < 100:
        assert changed == sum(
            isinstance(e, ToolResultEntry) for s in trimmed_runs for e in s.entries
        )
    # idempotent: a second call trims nothing and changes nothing
    assert await session.trim_tool_results(SID, keep_chars=keep_chars, keep_runs=keep_runs) == 0
    assert _shape(await session.segments(SID)) == _shape(after)


async def test_maintenance_of_one_session_never_touches_another(stores: Any) -> None:
    session, _ = stores
    await _fill(session)
    other = [
        InputEntry(role="user", content="mine"),
        ToolCallEntry(call_id="a1", name="look", arguments="{}"),
        ToolResultEntry(call_id="a1", output="o" * 900),
    ]
    await session.append("neighbour", other, run_id="run-a", meta={"keep": True})
    await session.append("neighbour", other[:1], run_id="run-z")
    await session.trim_tool_results(SID, keep_chars=0, keep_runs=0)
    await session.rewind(SID, keep_entries=2)
    await session.clear(SID)
    assert _shape(await session.segments("neighbour")) == [
        ("run-a", other, {"keep": True}),
        ("run-z", other[:1], None),
    ]


@pytest.mark.parametrize(
    "call",
    [
        {"keep_entries": -1},
        {"keep_entries": 2.0},
        {"keep_entries": None},
    ],
)
async def test_a_bad_rewind_is_a_user_error_that_changes_nothing(stores: Any, call: Any) -> None:
    session, _ = stores
    await _fill(session)
    with pytest.raises(UserError):
        await session.rewind(SID, **call)
    assert _shape(await session.segments(SID)) == _shape(_runs())


@pytest.mark.parametrize(
    ("keep", "left"),
    [
        (0, []),
        (1, [("r1", 1)]),
        (2, [("r1", 2), ("empty", 0)]),  # on the cut itself: kept, as 0.9.119 keeps it
        (3, [("r1", 2), ("empty", 0), ("r2", 1)]),
        (4, [("r1", 2), ("empty", 0), ("r2", 2), ("tail", 0)]),  # at the end: nothing
    ],
)
async def test_rewind_deletes_runs_without_entries_that_lie_after_the_cut(
    stores: Any, keep: int, left: list[tuple[str, int]]
) -> None:
    """Found by this test: a run appended with no entries survived every rewind, so
    ``keep_entries=0`` did not empty the session and a run after the cut was kept."""
    session, _ = stores
    two = [InputEntry(role="user", content="q"), AssistantTextEntry(content="a", id=None)]
    await session.append(SID, two, run_id="r1")
    await session.append(SID, [], run_id="empty")
    await session.append(SID, two, run_id="r2")
    await session.append(SID, [], run_id="tail")
    assert await session.rewind(SID, keep_entries=keep) == max(4 - keep, 0)
    assert [(s.run_id, len(s.entries)) for s in await session.segments(SID)] == left
