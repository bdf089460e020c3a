"""Every ``if_run_exists`` mode against a run the session already holds, on every store.

api.md: after ``cp.delete(run_id)`` the same id starts a fresh run, unless the given session
already holds a segment with that run id: then it replays from that segment or is refused
clearly. A session keeps one segment per run id (S5), so a fresh answer under that id can
never land there: before this test, ``"restart"`` and ``"fail"`` with the checkpoint deleted
ran the model again, returned the new answer and stored it in the checkpoint, while the
session kept the old one. A ``"restart"`` of a stored run does what C5 says (drop it and
start again), as in 0.9.119, and warns that the session keeps the earlier answer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, Runner, UserError
from lovia.events import RunCompleted, RunFailed
from lovia.testing import ScriptedProvider, text


async def _first_run(session: Any, cp: Any, *, keep_checkpoint: bool) -> None:
    agent = Agent("a", model=ScriptedProvider([text("first answer")]))
    opts = CheckpointOptions(cp, "job-7", delete_on_success=not keep_checkpoint)
    await Runner.run(agent, "question", session=session, session_id="u", checkpoint=opts)


def _state(snapshot: Any) -> Any:
    if snapshot is None:
        return None
    fields = dataclasses.asdict(snapshot)
    fields.pop("updated_at")
    return fields


@pytest.mark.parametrize(
    ("policy", "keep_checkpoint"),
    [("restart", False), ("fail", False), ("fail", True)],
    ids=["restart-deleted", "fail-deleted", "fail-kept"],
)
async def test_restart_or_fail_of_a_run_the_session_holds_is_refused_and_changes_nothing(
    stores: Any, policy: str, keep_checkpoint: bool
) -> None:
    session, cp = stores
    await _first_run(session, cp, keep_checkpoint=keep_checkpoint)
    before = (_state(await cp.load("job-7")), await session.segments("u"))
    model = ScriptedProvider([text("second answer")])
    opts = CheckpointOptions(cp, "job-7", if_run_exists=policy)
    with pytest.raises(UserError) as caught:
        await Runner.run(
            Agent("a", model=model), "again", session=session, session_id="u", checkpoint=opts
        )
    assert caught.value.hint
    assert model.calls == []
    assert (_state(await cp.load("job-7")), await session.segments("u")) == before
    # streamed, the refusal is the one terminal event
    handle = Runner.stream(
        Agent("a", model=model), "again", session=session, session_id="u", checkpoint=opts
    )
    events = [e async for e in handle]
    assert len(events) == 1 and isinstance(events[0], RunFailed)
    with pytest.raises(UserError):
        await handle.result()


async def test_restart_of_a_stored_run_the_session_holds_runs_again_and_warns(
    stores: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """C5: restart drops the stored run and starts again (as 0.9.119 does); the session keeps
    its earlier segment (one per run id), which a warning on the lovia logger says."""
    session, cp = stores
    await _first_run(session, cp, keep_checkpoint=True)
    model = ScriptedProvider([text("second answer")])
    opts = CheckpointOptions(cp, "job-7", if_run_exists="restart")
    with caplog.at_level("WARNING", logger="lovia"):
        result = await Runner.run(
            Agent("a", model=model), "again", session=session, session_id="u", checkpoint=opts
        )
    assert result.output == "second answer" and len(model.calls) == 1
    snapshot = await cp.load("job-7")
    assert snapshot is not None and snapshot.status == "completed"
    (segment,) = await session.segments("u")
    assert segment.entries[-1].content == "first answer"  # type: ignore[union-attr]
    warned = [r for r in caplog.records if r.name.startswith("lovia")]
    assert any("job-7" in r.getMessage() and "rewind" in r.getMessage() for r in warned)


@pytest.mark.parametrize("keep_checkpoint", [True, False], ids=["kept", "deleted"])
@pytest.mark.parametrize("policy", ["resume", "resume_only"])
async def test_resume_modes_of_a_run_the_session_holds_replay_or_refuse_clearly(
    stores: Any, policy: str, keep_checkpoint: bool
) -> None:
    session, cp = stores
    await _first_run(session, cp, keep_checkpoint=keep_checkpoint)
    model = ScriptedProvider([text("second answer")])
    opts = CheckpointOptions(cp, "job-7", if_run_exists=policy)
    agent = Agent("a", model=model)
    if policy == "resume_only" and not keep_checkpoint:
        with pytest.raises(UserError):
            await Runner.run(agent, [], session=session, session_id="u", checkpoint=opts)
    else:
        handle = Runner.stream(agent, "ignored", session=session, session_id="u", checkpoint=opts)
        events = [e async for e in handle]
        assert [type(e) for e in events] == [RunCompleted]
        result = await handle.result()
        assert result.output == "first answer" and result.finish_reason is None
    assert model.calls == []
    (segment,) = await session.segments("u")
    assert segment.run_id == "job-7"


async def test_after_a_rewind_that_removed_the_run_restart_answers_again(stores: Any) -> None:
    """The way out the refusal names: rewind the session before the run, then restart."""
    session, cp = stores
    await _first_run(session, cp, keep_checkpoint=True)
    assert await session.rewind("u", keep_entries=0) == 2
    model = ScriptedProvider([text("second answer")])
    opts = CheckpointOptions(cp, "job-7", if_run_exists="restart")
    result = await Runner.run(
        Agent("a", model=model), "again", session=session, session_id="u", checkpoint=opts
    )
    assert result.output == "second answer"
    (segment,) = await session.segments("u")
    assert [getattr(e, "content", None) for e in segment.entries] == ["again", "second answer"]
    snapshot = await cp.load("job-7")
    assert snapshot is not None and snapshot.output == "second answer"


async def test_restart_of_a_run_not_in_the_session_still_starts_again(stores: Any) -> None:
    """A run that completed but never reached its session (a crash between the two steps)
    is not held there: restart answers it afresh, and it lands once."""
    session, cp = stores
    agent = Agent("a", model=ScriptedProvider([text("unsaved")]))
    await Runner.run(agent, "question", checkpoint=CheckpointOptions(cp, "job-8"))
    model = ScriptedProvider([text("fresh")])
    opts = CheckpointOptions(cp, "job-8", if_run_exists="restart")
    result = await Runner.run(
        Agent("a", model=model), "question", session=session, session_id="u", checkpoint=opts
    )
    assert result.output == "fresh" and len(model.calls) == 1
    (segment,) = await session.segments("u")
    assert segment.run_id == "job-8"
