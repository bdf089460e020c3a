"""The session contract beyond the conformance kit (S7, S8, S10 edges; the built-in extras),
run against every backend in ``BACKENDS``; the promises any store keeps are
``lovia.testing.conformance``'s, run by ``test_conformance_kit.py``.

The ``session`` / ``session_backend`` fixtures come from this folder's ``conftest.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lovia import (
    AssistantTextEntry,
    InputEntry,
    Segment,
    SessionConflict,
    SessionHistory,
    StoreError,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UserError,
)
from lovia.context import content_digest


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def say(text: str) -> AssistantTextEntry:
    return AssistantTextEntry(content=text)


def call(call_id: str) -> ToolCallEntry:
    return ToolCallEntry(call_id=call_id, name="lookup", arguments='{"q": 1}')


def result(call_id: str, output: str = "ok") -> ToolResultEntry:
    return ToolResultEntry(call_id=call_id, output=output)


def tool_run(n: int, output: str = "ok") -> list[TranscriptEntry]:
    """One run as the runner stores it: input, a call, its result, the final text."""
    return [user(f"question {n}"), call(f"c{n}"), result(f"c{n}", output), say(f"answer {n}")]


async def three_runs(session: Any, sid: str = "s") -> list[TranscriptEntry]:
    """Runs A (4 entries, with a tool), B (4, with a tool), C (2): 10 entries in all."""
    await session.append(sid, tool_run(1), run_id="A", meta={"context_state": {"a": 1}})
    await session.append(sid, tool_run(2), run_id="B", meta={"context_state": {"b": 2}})
    await session.append(sid, [user("thanks"), say("welcome")], run_id="C", meta={"c": 3})
    loaded: list[TranscriptEntry] = await session.load(sid)
    return loaded


# -- the protocol ----------------------------------------------------------------------------


async def test_sessions_never_see_each_other(session: Any) -> None:
    """S7: different session_ids are isolated for reads, clear and maintenance."""
    await three_runs(session, "a")
    other = await three_runs(session, "b")
    await session.clear("a")
    await session.rewind("a", keep_entries=0)
    assert await session.trim_tool_results("a", keep_chars=0, keep_runs=0) == 0
    assert await session.load("a") == []
    assert await session.load("b") == other


@pytest.mark.parametrize("bad", ["", 42, None, "x" * 513])
async def test_bad_session_ids_raise_user_error(session: Any, bad: Any) -> None:
    with pytest.raises(UserError):
        await session.append(bad, [user("hi")])
    with pytest.raises(UserError):
        await session.load(bad)


# -- trim (S8) -------------------------------------------------------------------------------


async def test_trim_leaves_short_outputs_alone(session: Any) -> None:
    await session.append("s", tool_run(1, "y" * 400), run_id="r1")
    await session.append("s", tool_run(2), run_id="r2")
    assert await session.trim_tool_results("s") == 0
    assert await session.load("s") == tool_run(1, "y" * 400) + tool_run(2)


async def test_trim_with_keep_runs_zero_trims_every_run(session: Any) -> None:
    for n in (1, 2):
        await session.append("s", tool_run(n, "z" * 500), run_id=f"r{n}")
    assert await session.trim_tool_results("s", keep_chars=10, keep_runs=5) == 0
    assert await session.trim_tool_results("s", keep_chars=10, keep_runs=0) == 2
    outputs = [e.output for e in await session.load("s") if isinstance(e, ToolResultEntry)]
    assert (
        outputs
        == [
            "z" * 10 + "\n[lovia: trimmed 490 of 500 characters; "
            f'recall_tool_result("{content_digest("z" * 500)}") '
            "returns the whole output if a result store archived it]"
        ]
        * 2
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"keep_chars": -1},
        {"keep_runs": -1},
        {"keep_chars": 1.5},
        {"keep_runs": True},
        {"keep_chars": "400"},
    ],
)
async def test_trim_with_bad_arguments_raises_user_error_and_changes_nothing(
    session: Any, kwargs: dict[str, Any]
) -> None:
    before = await three_runs(session)
    with pytest.raises(UserError):
        await session.trim_tool_results("s", **kwargs)
    assert await session.load("s") == before


# -- rewind (S10) ----------------------------------------------------------------------------


async def test_rewind_at_a_run_boundary_deletes_later_runs(session: Any) -> None:
    """S10: runs wholly after the cut are deleted; a run before it keeps its meta."""
    await three_runs(session)
    assert await session.rewind("s", keep_entries=4) == 6
    assert await session.segments("s") == [Segment("A", tool_run(1), {"context_state": {"a": 1}})]


async def test_rewind_inside_a_run_keeps_answered_calls(session: Any) -> None:
    """S10: a cut after a result keeps the call and its result; the run's meta is cleared."""
    await three_runs(session)
    assert await session.rewind("s", keep_entries=7) == 3
    segments = await session.segments("s")
    assert segments[1] == Segment("B", tool_run(2)[:3], None)
    assert len(await session.load("s")) == 7


async def test_rewind_to_zero_empties_the_session(session: Any) -> None:
    """S10: keep_entries=0 empties the session."""
    await three_runs(session)
    assert await session.rewind("s", keep_entries=0) == 10
    assert await session.segments("s") == []
    assert await session.load("s") == []


@pytest.mark.parametrize("keep", [10, 11, 1000])
async def test_rewind_at_or_past_the_end_does_nothing(session: Any, keep: int) -> None:
    """S10: a cut at or past the end removes nothing and keeps every meta."""
    await three_runs(session)
    before = await session.segments("s")
    assert await session.rewind("s", keep_entries=keep) == 0
    assert await session.segments("s") == before


async def test_rewind_of_an_unknown_session_removes_nothing(session: Any) -> None:
    assert await session.rewind("nobody", keep_entries=0) == 0


@pytest.mark.parametrize("keep", [-1, 2.0, None, False, "3"])
async def test_rewind_with_bad_arguments_raises_user_error_and_changes_nothing(
    session: Any, keep: Any
) -> None:
    before = await three_runs(session)
    with pytest.raises(UserError):
        await session.rewind("s", keep_entries=keep)
    assert await session.load("s") == before


async def test_rewind_runs_names_the_runs_to_forget_checkpoints_of(session: Any) -> None:
    """S10/S11: rewind_runs tells the caller which runs were truncated or deleted."""
    await three_runs(session)
    done = await session.rewind_runs("s", keep_entries=6)
    assert done.removed == 5
    assert sorted(done.affected_run_ids) == ["B", "C"]
    nothing = await session.rewind_runs("s", keep_entries=99)
    assert (nothing.removed, nothing.affected_run_ids) == (0, ())


async def test_after_rewind_new_runs_append_after_the_cut(session: Any) -> None:
    """S10: rewind is the primitive under edit-and-resend: the next run follows the kept part."""
    await three_runs(session)
    await session.rewind("s", keep_entries=4)
    await session.append("s", [user("edited"), say("new answer")], run_id="D")
    await session.append("s", [user("old C again")], run_id="C")  # deleted ids are free again
    assert await session.load("s") == [
        *tool_run(1),
        user("edited"),
        say("new answer"),
        user("old C again"),
    ]


async def test_trim_after_rewind_sees_the_rewound_runs(session: Any) -> None:
    for n in (1, 2, 3):
        await session.append("s", tool_run(n, "q" * 300), run_id=f"r{n}")
    await session.rewind("s", keep_entries=8)
    assert await session.trim_tool_results("s", keep_chars=5, keep_runs=1) == 1


# -- listing (built-in extra) ----------------------------------------------------------------


async def test_list_sessions_reports_runs_entries_and_title(session: Any) -> None:
    await three_runs(session, "a")
    await session.append("b", [say("no user input"), user("  hello\n  there  " + "w" * 100)])
    infos = {i.session_id: i for i in await session.list_sessions()}
    assert set(infos) == {"a", "b"}
    assert (infos["a"].runs, infos["a"].entries, infos["a"].title) == (3, 10, "question 1")
    title = infos["b"].title
    assert title is not None and title.startswith("hello there www") and len(title) == 80
    assert infos["a"].created_at <= infos["a"].updated_at
    await session.clear("a")
    assert [i.session_id for i in await session.list_sessions()] == ["b"]


# -- the session version (built-in extra; issue 9: no silent fork) ---------------------------


async def version_of(session: Any, sid: str = "s") -> int:
    history = await session.history(sid)
    assert history.segments == await session.segments(sid)  # read together, and the same
    version: int = history.version
    return version


async def test_version_starts_at_zero_and_grows_with_every_change(session: Any) -> None:
    """Every change bumps the version: append, trim, rewind, clear; it never goes back."""
    assert await session.history("s") == SessionHistory([], 0)
    seen = [await version_of(session)]
    await session.append("s", tool_run(1, "x" * 500), run_id="A")
    seen.append(await version_of(session))
    await session.append("s", tool_run(2), run_id="B")
    seen.append(await version_of(session))
    assert await session.trim_tool_results("s", keep_chars=5, keep_runs=1) == 1
    seen.append(await version_of(session))
    assert await session.rewind("s", keep_entries=4) == 4
    seen.append(await version_of(session))
    await session.clear("s")
    seen.append(await version_of(session))
    assert seen == sorted(set(seen)), seen  # strictly increasing
    assert seen[0] == 0
    await session.append("s", [user("again")], run_id="C")
    assert await version_of(session) > seen[-1]  # a clear does not reset the count


async def test_version_holds_still_when_nothing_changes(session: Any) -> None:
    """An idempotent re-append (S5), a trim or rewind with nothing to do, and clearing an
    empty session leave the version alone; other sessions do not move it either."""
    await session.append("s", tool_run(1), run_id="A")
    before = await version_of(session)
    assert await session.append("s", [user("other")], run_id="A") == "A"
    assert await session.trim_tool_results("s", keep_chars=400, keep_runs=0) == 0
    assert await session.rewind("s", keep_entries=100) == 0
    await session.append("t", [user("elsewhere")], run_id="B")
    await session.clear("nobody")
    assert await version_of(session) == before
    assert await version_of(session, "nobody") == 0


async def test_append_at_the_expected_version_lands_and_bumps_it(session: Any) -> None:
    await session.append("s", tool_run(1), run_id="A")
    version = await version_of(session)
    assert await session.append("s", tool_run(2), run_id="B", expected_version=version) == "B"
    assert await version_of(session) == version + 1
    assert await session.append("new", [user("hi")], run_id="C", expected_version=0) == "C"


async def test_a_stale_expected_version_raises_and_writes_nothing(session: Any) -> None:
    """Two runs loaded version v; the first appends; the second gets SessionConflict naming
    the session and both versions, and the session holds only the first."""
    await session.append("s", tool_run(1), run_id="A")
    loaded = await version_of(session)
    await session.append("s", tool_run(2), run_id="B", expected_version=loaded)
    with pytest.raises(SessionConflict) as info:
        await session.append("s", tool_run(3), run_id="C", expected_version=loaded)
    err = info.value
    assert isinstance(err, StoreError)
    assert (err.session_id, err.expected_version, err.current_version) == ("s", 1, 2)
    assert "'s'" in err.message and err.hint and "if_run_exists='restart'" in err.hint
    assert [s.run_id for s in await session.segments("s")] == ["A", "B"]
    assert await version_of(session) == 2


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True])
async def test_a_bad_expected_version_is_a_user_error(session: Any, bad: Any) -> None:
    with pytest.raises(UserError):
        await session.append("s", [user("x")], run_id="A", expected_version=bad)
    assert await session.segments("s") == []


async def test_the_version_survives_reopening(session_backend: Any) -> None:
    first = session_backend.open()
    await first.append("s", tool_run(1), run_id="A")
    await first.clear("s")
    again = session_backend.open()
    assert await version_of(again) == 2
    with pytest.raises(SessionConflict):
        await again.append("s", [user("late")], run_id="B", expected_version=1)


async def test_of_eight_writers_at_one_version_exactly_one_lands(session_backend: Any) -> None:
    """Check and write are one transaction: eight stores (connections) appending at the
    version they all read store one segment; the other seven raise SessionConflict."""
    stores = [session_backend.open() for _ in range(8)]
    await stores[0].append("s", [user("start")], run_id="r0")
    version = await version_of(stores[0])

    async def write(i: int) -> str:
        store = stores[i]
        rid: str = await store.append("s", [say(f"w{i}")], run_id=f"w{i}", expected_version=version)
        return rid

    outcomes = await asyncio.gather(*(write(i) for i in range(8)), return_exceptions=True)
    landed = [o for o in outcomes if isinstance(o, str)]
    assert len(landed) == 1, outcomes
    assert all(isinstance(o, SessionConflict) for o in outcomes if not isinstance(o, str))
    assert [s.run_id for s in await stores[0].segments("s")] == ["r0", landed[0]]
    assert await version_of(stores[0]) == version + 1
