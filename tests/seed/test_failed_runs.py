"""How a run that ended without an answer is recorded and re-submitted (C3, C5), where the
seed is silent and lovia 0.9.119's behaviour decides."""

from __future__ import annotations

import pytest

from lovia import (
    Agent,
    CancelToken,
    CheckpointOptions,
    GuardrailTripped,
    InMemoryCheckpointer,
    MaxTurnsExceeded,
    OutputValidationError,
    RunCancelled,
    Runner,
    tool,
)
from lovia.testing import ScriptedProvider, call, text


@tool
def step() -> str:
    """One step of work."""
    return "stepped"


async def test_a_run_out_of_turns_is_interrupted_and_finishes_with_more_turns() -> None:
    """C3: a run stopped by max_turns is "interrupted" (as 0.9.119 records it, and as the run
    log line says), and re-submitting it with a larger max_turns finishes it."""
    cp = InMemoryCheckpointer()
    agent = Agent("a", model=ScriptedProvider([call("step"), call("step")]), tools=[step])
    with pytest.raises(MaxTurnsExceeded):
        await Runner.run(agent, "go", max_turns=2, checkpoint=CheckpointOptions(cp, "r"))
    snap = await cp.load("r")
    assert snap is not None and snap.status == "interrupted" and snap.turns == 2
    assert snap.error is not None and snap.error["type"] == "MaxTurnsExceeded"
    agent = agent.clone(model=ScriptedProvider([text("finished")]))
    result = await Runner.run(agent, "go", max_turns=5, checkpoint=CheckpointOptions(cp, "r"))
    assert result.output == "finished" and result.turns == 3


async def test_a_run_whose_answer_a_guardrail_rejected_asks_the_model_again_on_resume() -> None:
    """C5: under "resume" a "failed" run is continued. When the output guardrail rejected the
    final answer, continuing means a new model turn (0.9.119), not judging the same rejected
    answer again, which would fail every re-submission the same way."""
    cp = InMemoryCheckpointer()
    judged: list[str] = []

    def no_x(output: str, ctx: object) -> str | None:
        judged.append(output)
        return "x is not allowed" if output == "x" else None

    agent = Agent("a", model=ScriptedProvider([text("x")]), output_guardrails=[no_x])
    with pytest.raises(GuardrailTripped):
        await Runner.run(agent, "q", checkpoint=CheckpointOptions(cp, "r"))
    snap = await cp.load("r")
    assert snap is not None and snap.status == "failed"
    model = ScriptedProvider([text("y")])
    result = await Runner.run(agent.clone(model=model), "q", checkpoint=CheckpointOptions(cp, "r"))
    assert result.output == "y" and len(model.calls) == 1 and judged == ["x", "y"]
    assert [e.type for e in result.entries] == ["input", "assistant_text", "assistant_text"]
    snap = await cp.load("r")
    assert snap is not None and snap.status == "completed"


async def test_the_chat_pages_offer_no_retry_for_a_run_out_of_turns() -> None:
    """The chat pages retry a pending run with the server's same max_turns, which would stop a
    run out of turns again at once: interrupted or not, it is not offered as retryable (a
    cancelled run is)."""
    from lovia.chats import can_retry

    cp = InMemoryCheckpointer()
    agent = Agent("a", model=ScriptedProvider([call("step"), call("step")]), tools=[step])
    with pytest.raises(MaxTurnsExceeded):
        await Runner.run(agent, "go", max_turns=1, checkpoint=CheckpointOptions(cp, "r"))
    out_of_turns = await cp.load("r")
    assert out_of_turns is not None and not can_retry(out_of_turns)

    token = CancelToken()
    token.cancel()
    with pytest.raises(RunCancelled):
        await Runner.run(agent, "go", cancel_token=token, checkpoint=CheckpointOptions(cp, "c"))
    cancelled = await cp.load("c")
    assert cancelled is not None and cancelled.status == "interrupted" and can_retry(cancelled)


async def test_a_run_whose_answer_did_not_fit_its_output_type_asks_the_model_again() -> None:
    """As with a guardrail: a resume of a run that failed on its final answer's type asks the
    model again, and the output is parsed from the new answer alone."""
    cp = InMemoryCheckpointer()
    agent = Agent("b", model=ScriptedProvider([text("abc")]), output_type=int, output_repair=False)
    with pytest.raises(OutputValidationError):
        await Runner.run(agent, "q", checkpoint=CheckpointOptions(cp, "r"))
    model = ScriptedProvider([text("5")])
    result = await Runner.run(agent.clone(model=model), "q", checkpoint=CheckpointOptions(cp, "r"))
    assert result.output == 5 and len(model.calls) == 1
    assert [e.type for e in result.entries] == ["input", "assistant_text", "assistant_text"]
    again = await Runner.run(
        agent.clone(model=ScriptedProvider([])), "q", checkpoint=CheckpointOptions(cp, "r")
    )
    assert again.output == 5  # completed now: a replay, no model
