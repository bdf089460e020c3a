"""Forking a session into a new session id, on every backend (issue 33): whole, up to a run,
or up to an entry; the source is unchanged and the fork records where it came from."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import InputEntry, UserError
from lovia.transcript import AssistantTextEntry


def _turn(n: int) -> list[Any]:
    return [InputEntry(role="user", content=f"q{n}"), AssistantTextEntry(content=f"a{n}")]


async def _three_runs(session: Any) -> list[Any]:
    for n in range(3):
        await session.append("s", _turn(n), run_id=f"run{n}", meta={"context_state": {"n": n}})
    return await session.segments("s")


async def test_a_whole_fork_copies_every_run_and_names_its_origin(session: Any) -> None:
    source = await _three_runs(session)
    copied = await session.fork("s", "s2")
    assert [s.run_id for s in copied] == ["run0", "run1", "run2"]
    assert await session.load("s2") == await session.load("s")
    assert await session.segments("s") == source  # the source is unchanged
    infos = {i.session_id: i for i in await session.list_sessions()}
    assert infos["s2"].forked_from == {"session_id": "s"}
    assert infos["s"].forked_from is None
    assert infos["s2"].runs == 3 and infos["s2"].entries == 6


async def test_a_fork_up_to_a_run_keeps_that_run_and_those_before(session: Any) -> None:
    await _three_runs(session)
    await session.fork("s", "s2", upto_run="run1")
    assert await session.load("s2") == _turn(0) + _turn(1)
    segments = await session.segments("s2")
    assert segments[-1].meta == {"context_state": {"n": 1}}  # a run's meta goes with it
    infos = {i.session_id: i for i in await session.list_sessions()}
    assert infos["s2"].forked_from == {"session_id": "s", "upto_run": "run1"}


async def test_a_fork_up_to_an_entry_cuts_as_a_rewind_does(session: Any) -> None:
    await _three_runs(session)
    await session.fork("s", "s2", keep_entries=3)
    assert await session.load("s2") == [*_turn(0), InputEntry(role="user", content="q1")]
    assert len(await session.load("s")) == 6
    # the fork is a session like any other: it grows on its own
    await session.append("s2", _turn(9), run_id="run9")
    assert len(await session.load("s2")) == 5 and len(await session.load("s")) == 6


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"session_id": "s", "new_session_id": "s"}, "id of its own"),
        ({"session_id": "s", "new_session_id": "t"}, "exists already"),
        ({"session_id": "s", "new_session_id": "n", "upto_run": "nope"}, "no run 'nope'"),
        ({"session_id": "s", "new_session_id": "n", "keep_entries": 0}, "would be empty"),
        ({"session_id": "empty", "new_session_id": "n"}, "would be empty"),
        (
            {"session_id": "s", "new_session_id": "n", "upto_run": "run0", "keep_entries": 1},
            "not both",
        ),
    ],
)
async def test_a_refused_fork_changes_nothing(
    session: Any, args: dict[str, Any], words: str
) -> None:
    await _three_runs(session)
    await session.append("t", _turn(7), run_id="other")
    before = (await session.segments("s"), await session.segments("t"))
    with pytest.raises(UserError, match=words) as caught:
        await session.fork(**args)
    assert caught.value.hint
    assert (await session.segments("s"), await session.segments("t")) == before
    assert await session.load("n") == []
