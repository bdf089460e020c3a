"""S6: a stopped run's partial transcript, kept in the session by its caller (tool calls
without a result dropped), is that run's one segment. Re-submitting the same run id must not
run it again for an answer the session could never keep (S5: one segment per run id; C12: a
run is never both "persisted as completed" and "still resumable").

Found by the seed page's black-box check: with its checkpoint kept (the page asks only a
rewound run's checkpoint to be deleted, S11) the resume ran the dangling call and the model
again, and with its checkpoint deleted the run started afresh on the new input; either way
the answer the caller got was never in the conversation, and 0.9.119 does the same."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from lovia import (
    Agent,
    CancelToken,
    CheckpointOptions,
    OutputValidationError,
    RunCancelled,
    Runner,
    UserError,
    tool,
)
from lovia.testing import ScriptedProvider, batch, text
from lovia.transcript import AssistantTextEntry, drop_dangling_tool_calls


class Answer(BaseModel):
    answer: str


async def _stop_and_keep(session: Any, cp: Any, ran: list[int], *, answer: str | None) -> Any:
    """Run ``stop-1`` until its first call stops it, then keep its partial as S6 says."""
    token = CancelToken()

    @tool(parallel=False)
    def step(n: int) -> str:
        """Do step n."""
        ran.append(n)
        if n == 1:
            token.cancel()
        return f"step {n} done"

    model = ScriptedProvider([batch(("step", {"n": 1}, "c1"), ("step", {"n": 2}, "c2"))])
    agent = Agent("a", model=model, tools=[step])
    opts = CheckpointOptions(cp, "stop-1")
    with pytest.raises(RunCancelled):
        await Runner.run(
            agent, "go", session=session, session_id="u1", checkpoint=opts, cancel_token=token
        )
    snapshot = await cp.load("stop-1")
    partial = drop_dangling_tool_calls(snapshot.entries)
    if answer is not None:
        partial.append(AssistantTextEntry(content=answer))
    await session.append("u1", partial, run_id="stop-1", meta={"ended": "stopped"})
    return agent


@pytest.mark.parametrize("delete_checkpoint", [False, True], ids=["kept", "deleted"])
async def test_S6_resubmitting_a_kept_stopped_run_without_an_answer_is_refused(
    stores: Any, delete_checkpoint: bool
) -> None:
    session, cp = stores
    ran: list[int] = []
    agent = await _stop_and_keep(session, cp, ran, answer=None)
    if delete_checkpoint:
        await cp.delete("stop-1")
    before = await cp.load("stop-1")
    kept = await session.load("u1")
    model = ScriptedProvider([text("an answer nobody keeps")])
    with pytest.raises(UserError) as caught:
        await Runner.run(
            agent.clone(model=model),
            "go again",
            session=session,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, "stop-1"),
        )
    assert "stop-1" in caught.value.message and "new run_id" in (caught.value.hint or "")
    assert model.calls == [] and ran == [1]  # no model call; the dangling call did not run
    assert await session.load("u1") == kept
    after = await cp.load("stop-1")
    assert (after is None) == delete_checkpoint
    if after is not None:
        assert (after.status, after.entries, after.updated_at) == (
            before.status,
            before.entries,
            before.updated_at,
        )


@pytest.mark.parametrize("policy", ["resume", "resume_only"])
async def test_S6_a_kept_stopped_run_with_an_answer_is_replayed_from_its_segment(
    stores: Any, policy: str
) -> None:
    """Its checkpoint kept (``"interrupted"``): the answer is the one the session holds, as
    for a run whose checkpoint was deleted on success (api.md, Stores)."""
    session, cp = stores
    ran: list[int] = []
    agent = await _stop_and_keep(session, cp, ran, answer="Stopped after step 1.")
    kept = await session.load("u1")
    model = ScriptedProvider([text("an answer nobody keeps")])
    again = await Runner.run(
        agent.clone(model=model),
        [],
        session=session,
        session_id="u1",
        checkpoint=CheckpointOptions(cp, "stop-1", if_run_exists=policy),
    )
    assert (again.output, again.replayed) == ("Stopped after step 1.", True)
    assert model.calls == [] and ran == [1]
    assert await session.load("u1") == kept
    assert (await cp.load("stop-1")).status == "interrupted"


async def test_S6_a_kept_answer_the_output_type_refuses_leaves_the_checkpoint_as_it_was(
    stores: Any,
) -> None:
    """A replay from the kept segment that fails (here its answer is not the agent's output
    type) changes nothing stored: the head was rewritten from the blank state of a run that
    had not been set up yet (turns and usage 0, the step records gone)."""
    session, cp = stores
    ran: list[int] = []
    agent = await _stop_and_keep(session, cp, ran, answer="Stopped after step 1.")
    before = await cp.load("stop-1")
    model = ScriptedProvider([text('{"answer": "an answer nobody keeps"}')])
    with pytest.raises(OutputValidationError):
        await Runner.run(
            agent.clone(model=model, output_type=Answer),
            [],
            session=session,
            session_id="u1",
            checkpoint=CheckpointOptions(cp, "stop-1"),
        )
    assert model.calls == [] and ran == [1]
    after = await cp.load("stop-1")
    assert (after.status, after.turns, after.usage, after.entries, after.updated_at) == (
        before.status,
        before.turns,
        before.usage,
        before.entries,
        before.updated_at,
    )
