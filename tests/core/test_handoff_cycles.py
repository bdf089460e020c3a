"""Two agents that hand over to each other. lovia 0.9.119's users built the cycle by assigning
``b.handoffs = [a]`` after the fact; agents are frozen here, so the later agent is named by a
function: ``Handoff(lambda: triage)``."""

from __future__ import annotations

import dataclasses

import pytest

from lovia import Agent, CheckpointOptions, Handoff, Runner, UserError
from lovia.events import HandoffOccurred
from lovia.stores import SQLiteCheckpointer
from lovia.testing import ScriptedProvider, call, text


def desk(triage_model: ScriptedProvider, billing_model: ScriptedProvider) -> Agent:
    billing = Agent(
        "billing",
        instructions="Refunds.",
        model=billing_model,
        handoffs=[Handoff(lambda: triage, description="Back to the front desk.")],
    )
    triage = Agent("triage", instructions="Route.", model=triage_model, handoffs=[billing])
    return triage


async def test_a_handoff_can_lead_back_to_the_agent_that_handed_over() -> None:
    triage_model = ScriptedProvider([call("transfer_to_billing", {}), text("anything else?")])
    billing_model = ScriptedProvider([call("transfer_to_triage", {"reason": "done"})])
    triage = desk(triage_model, billing_model)

    handle = Runner.stream(triage, "refund please")
    moves = [
        (e.from_agent.name, e.to_agent.name) async for e in handle if isinstance(e, HandoffOccurred)
    ]
    result = await handle.result()

    assert result.output == "anything else?"
    assert result.final_agent is triage
    assert moves == [("triage", "billing"), ("billing", "triage")]
    # billing's model was offered the way back, described as its Handoff says
    offered = {t.name: t.description for t in triage.handoffs[0].target.all_tools()}
    assert offered["transfer_to_triage"] == "Back to the front desk."


async def test_a_run_parked_in_a_cycle_resumes_by_agent_name(tmp_path: object) -> None:
    path = f"{tmp_path}/runs.db"
    triage = desk(
        ScriptedProvider([call("transfer_to_billing", {})]),
        ScriptedProvider([call("transfer_to_triage", {})]),
    )
    async with SQLiteCheckpointer(path) as cp:
        with pytest.raises(AssertionError, match="ran out"):  # triage has no second answer
            await Runner.run(triage, "refund please", checkpoint=CheckpointOptions(cp, "r1"))
        head = await cp.load("r1")
        assert head is not None and head.agent_name == "triage"

        resumed = desk(ScriptedProvider([text("back at the desk")]), ScriptedProvider([]))
        result = await Runner.run(resumed, [], checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "back at the desk"
    assert result.final_agent is resumed


def test_the_target_is_read_only_and_must_be_an_agent() -> None:
    triage = Agent("triage")
    handoff = Handoff(lambda: triage)
    assert handoff.target is triage
    assert handoff == Handoff(triage)
    with pytest.raises(dataclasses.FrozenInstanceError):
        handoff.target = triage  # type: ignore[misc]
    with pytest.raises(UserError, match="cannot hand off to int"):
        Handoff(3)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="returned str"):
        _ = Handoff(lambda: "triage").tool_name  # type: ignore[arg-type,return-value]
