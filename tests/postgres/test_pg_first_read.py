"""A checkpointed run on ``open_stores``' PostgreSQL stores (one pool for both) reads its
session's history once, in the round trip that takes its lease and loads it (issue 34), and
what that read holds still decides whether a kept stopped run is refused (S5, S6)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from lovia import Agent, PostgresSession, UserError
from lovia.session import TIMING_META_KEY
from lovia.stores.checkpoint import RunHead
from lovia.stores.open import open_stores
from lovia.testing import ScriptedProvider, text
from lovia.transcript import AssistantTextEntry, InputEntry

from ..run.session_reads import SESSION, answered, reached_the_model, run_in, stopped
from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn


@pytest.fixture
async def stores() -> AsyncIterator[tuple[Any, Any]]:
    dsn, prefix = postgres_dsn(), fresh_prefix()
    session, checkpointer = open_stores(dsn, table_prefix=prefix)
    try:
        yield session, checkpointer
    finally:
        await session.close()
        await checkpointer.close()
        drop_prefix(dsn, prefix)


@pytest.fixture
def history_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The session ids ``PostgresSession.history`` was asked for, one round trip each (the
    test empties it when its setup is done)."""
    asked: list[str] = []
    read = PostgresSession.history

    async def history(self: PostgresSession, session_id: str) -> Any:
        asked.append(session_id)
        return await read(self, session_id)

    monkeypatch.setattr(PostgresSession, "history", history)
    return asked


def _inputs(entries: Any) -> list[Any]:
    return [e.content for e in entries if isinstance(e, InputEntry)]


async def _refused_kept(session: Any, cp: Any, history_reads: list[str], input: Any) -> None:
    """Run "kept" (kept in u1 with its question, no answer) is refused on ``input``,
    from the read that took its lease: no model call, no history read of its own."""
    await session.append(SESSION, [InputEntry(content="go")], run_id="kept", meta={})
    history_reads.clear()
    model = ScriptedProvider([text("an answer nobody keeps")])
    with pytest.raises(UserError, match="kept"):
        await run_in(Agent("a", model=model), input, session, cp, "kept")
    assert model.calls == [] and history_reads == []


def _timing(segment: Any) -> dict[str, Any]:
    found: dict[str, Any] = (segment.meta or {})[TIMING_META_KEY]
    return found


async def test_a_new_run_reads_its_session_only_with_its_lease(
    stores: tuple[Any, Any], history_reads: list[str]
) -> None:
    session, cp = stores
    await answered(session, cp)
    history_reads.clear()  # the tables are ready now: the lease's round trip can carry it
    model = ScriptedProvider([text("two")])
    result = await run_in(Agent("a", model=model), "again", session, cp, "r1")
    assert result.output == "two"
    assert history_reads == []  # was ["u1"]: read again on its own before the run started
    assert _inputs(await session.load(SESSION)) == ["hi", "again"]


async def test_a_kept_run_without_an_answer_is_refused_from_the_read_with_the_lease(
    stores: tuple[Any, Any], history_reads: list[str]
) -> None:
    session, cp = stores
    await answered(session, cp)
    await _refused_kept(session, cp, history_reads, "go again")
    assert await cp.load("kept") is None


async def test_a_resumed_run_reads_its_session_only_with_its_lease(
    stores: tuple[Any, Any], history_reads: list[str]
) -> None:
    session, cp = stores
    await answered(session, cp)
    await stopped(cp, "r1", "again")
    history_reads.clear()
    model = ScriptedProvider([text("two")])
    result = await run_in(Agent("a", model=model), [], session, cp, "r1")
    assert result.output == "two"
    assert history_reads == []  # was ["u1", "u1"]: refuse_if_settled's read, then setup's
    assert reached_the_model(model)  # the history reached the model
    assert [s.run_id for s in await session.segments(SESSION)] == ["r0", "r1"]


async def test_a_resumed_run_kept_without_an_answer_is_refused_from_the_read_with_the_lease(
    stores: tuple[Any, Any], history_reads: list[str]
) -> None:
    session, cp = stores
    await stopped(cp, "kept", "go")
    await _refused_kept(session, cp, history_reads, [])
    assert (await cp.load("kept")).status == "interrupted"  # type: ignore[union-attr]


async def test_a_replayed_run_carries_the_timing_its_segment_recorded(
    stores: tuple[Any, Any], history_reads: list[str]
) -> None:
    session, cp = stores
    await answered(session, cp)
    history_reads.clear()
    result = await run_in(Agent("a", model=ScriptedProvider([])), "hi", session, cp, "r0")
    assert result.replayed and result.output == "one"
    [segment] = await session.segments(SESSION)
    recorded = _timing(segment)
    assert (result.started_at, result.finished_at) == (
        recorded["started_at"],
        recorded["finished_at"],
    )  # was (None, None): the history read with the lease was dropped
    assert history_reads == []


async def test_a_replay_that_appends_its_segment_carries_the_timing_it_wrote(
    stores: tuple[Any, Any], history_reads: list[str]
) -> None:
    # the run completed, then stopped before its session append (a crash): the replay
    # appends the segment, and its result carries the timing that segment records
    session, cp = stores
    await session.append(SESSION, [InputEntry(content="hi")], run_id="r0", meta={})
    entries = [InputEntry(role="user", content="go"), AssistantTextEntry(content="done")]
    head = RunHead("a", status="completed", session_id=SESSION, started_at=1000.0, output="done")
    await cp.append("r1", entries, head)
    history_reads.clear()
    result = await run_in(Agent("a", model=ScriptedProvider([])), "go", session, cp, "r1")
    assert result.replayed and result.output == "done"
    segment = (await session.segments(SESSION))[-1]
    recorded = _timing(segment)
    assert segment.run_id == "r1" and recorded["started_at"] == 1000.0
    assert (result.started_at, result.finished_at) == (1000.0, recorded["finished_at"])
    assert history_reads == []
