"""Approval failures other agent frameworks shipped (issue 15), each shown not to happen here
through the public API: parked runs, decisions from elsewhere, resumes, retries, cancels,
restores, sessions."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    ApprovalPending,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    ProviderError,
    RunCancelled,
    RunContext,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    UserError,
    approvals,
    events,
    tool,
)
from lovia.approvals import argument_digest
from lovia.messages import Message
from lovia.testing import ScriptedProvider, call, text


def pay_tool(log: list[Any]) -> Any:
    @tool(needs_approval=True)
    def pay(ctx: RunContext[Any], amount: int) -> str:
        """Pay an amount."""
        log.append((amount, ctx.deps))
        return f"paid {amount}"

    return pay


def deferring(model: ScriptedProvider, log: list[Any]) -> Agent:
    return Agent("a", model=model, tools=[pay_tool(log)], approval_handler=lambda c, x: "defer")


async def park(cp: Any, run_id: str, log: list[Any], **options: Any) -> None:
    agent = deferring(ScriptedProvider([call("pay", {"amount": 5})]), log)
    with pytest.raises(ApprovalPending):
        await Runner.run(agent, "pay 5", checkpoint=CheckpointOptions(cp, run_id), **options)


def well_formed(messages: list[Message]) -> bool:
    """Every tool call answered, and every tool result preceded by its call."""
    asked: set[str] = set()
    for m in messages:
        if m.role == "tool" and m.tool_call_id not in asked:
            return False
        asked.update(c.id for c in m.tool_calls or ())
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    return asked <= answered


async def test_an_approval_holds_when_the_resume_passes_deps() -> None:
    """openai-agents#4244: an approval was ignored on resume when a context was passed. Here
    the resume with ``deps=`` runs the approved call once, with the new deps, asking nobody."""
    log: list[Any] = []
    cp = InMemoryCheckpointer()
    await park(cp, "r1", log, deps={"user": "first"})
    await approvals.decide(cp, "r1", {"call_pay": True})
    asked: list[str] = []
    agent = Agent(
        "a",
        model=ScriptedProvider([text("done")]),
        tools=[pay_tool(log)],
        approval_handler=lambda c, ctx: asked.append(c.id) or "deny",
    )
    result = await Runner.run(
        agent, [], checkpoint=CheckpointOptions(cp, "r1"), deps={"user": "second"}
    )
    assert result.output == "done"
    assert log == [(5, {"user": "second"})] and asked == []


async def test_two_runs_with_the_same_call_id_do_not_share_an_approval() -> None:
    """openai-agents PR#4409: two copies of a run state shared one approval, so a tool ran
    without its own. Two parked runs whose calls have one call id: approving one leaves the
    other waiting, and its tool does not run."""
    log: list[Any] = []
    cp = InMemoryCheckpointer()
    await park(cp, "r1", log)
    await park(cp, "r2", log)
    await approvals.decide(cp, "r1", {"call_pay": True})
    assert [c.id for c in await approvals.pending(cp, "r2")] == ["call_pay"]
    second = deferring(ScriptedProvider([]), log)
    with pytest.raises(ApprovalPending):
        await Runner.run(second, [], checkpoint=CheckpointOptions(cp, "r2"))
    assert log == []
    first = deferring(ScriptedProvider([text("paid")]), log)
    assert (await Runner.run(first, [], checkpoint=CheckpointOptions(cp, "r1"))).output == "paid"
    assert [amount for amount, _ in log] == [5]


async def test_a_stale_copy_of_an_approved_snapshot_finds_the_approval_consumed() -> None:
    """openai-agents PR#4409, the other half: resuming from a copy of the snapshot taken
    while the approval stood (``resume_from=``) after the run already used it runs the tool
    no second time."""
    log: list[Any] = []
    cp = InMemoryCheckpointer()
    await park(cp, "r1", log)
    await approvals.decide(cp, "r1", {"call_pay": True})
    stale = await cp.load("r1")
    assert stale is not None
    agent = deferring(ScriptedProvider([text("paid"), text("again")]), log)
    await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "r1"))
    assert len(log) == 1
    with pytest.raises(ApprovalPending):  # asked again (and deferred): not used twice
        await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "r1", resume_from=stale))
    assert len(log) == 1
    assert [c.id for c in await approvals.pending(cp, "r1")] == ["call_pay"]


async def test_an_engine_retry_after_the_approved_call_does_not_run_it_again() -> None:
    """pydantic-ai#5536 (an approval as a plain bool, so a retry re-ran the approved tool)
    and agent-framework#7458 (the approval consumed and the tool executed before the run
    failed, losing the answer): the model fails right after the approved call ran; the
    re-submission answers from the stored result and runs nothing again."""
    log: list[Any] = []
    cp = InMemoryCheckpointer()
    await park(cp, "r1", log)
    await approvals.decide(cp, "r1", {"call_pay": True})

    def broken(messages: list[Message]) -> Any:
        raise ProviderError("the model service fell over", retryable=False)

    failing = deferring(ScriptedProvider([broken]), log)
    with pytest.raises(ProviderError):
        await Runner.run(failing, [], checkpoint=CheckpointOptions(cp, "r1"))
    assert len(log) == 1
    model = ScriptedProvider([text("paid 5, done")])
    retried = await Runner.run(deferring(model, log), [], checkpoint=CheckpointOptions(cp, "r1"))
    assert retried.output == "paid 5, done"
    assert len(log) == 1
    assert [m.content for m in model.calls[0] if m.role == "tool"] == ["paid 5"]


async def test_a_cancelled_or_restarted_run_leaves_no_pending_approval_behind() -> None:
    """letta#3176: cancelling a run left a pending approval that deadlocked the conversation.
    A run cancelled while it waits for a decision, a parked run restarted, and a parked run
    deleted all leave nothing pending, and the conversation goes on with a well-formed prompt."""
    log: list[Any] = []
    session = InMemorySession()
    cp = InMemoryCheckpointer()
    agent = Agent("a", model=ScriptedProvider([call("pay", {"amount": 1})]), tools=[pay_tool(log)])
    handle = Runner.stream(
        agent, "pay 1", session=session, session_id="s", checkpoint=CheckpointOptions(cp, "r1")
    )
    with pytest.raises(RunCancelled):
        async for ev in handle:
            if isinstance(ev, events.ApprovalRequired):
                handle.cancel()
        await handle.result()
    assert await approvals.pending(cp, "r1") == []
    model = ScriptedProvider([text("hello again")])
    after = await Runner.run(
        Agent("a", model=model, tools=[pay_tool(log)]), "hi", session=session, session_id="s"
    )
    assert after.output == "hello again" and well_formed(model.calls[0])
    # a parked run restarted, or deleted, leaves no pending approval
    await park(cp, "r2", log)
    restart = deferring(ScriptedProvider([text("fresh")]), log)
    fresh = await Runner.run(
        restart, "hi", checkpoint=CheckpointOptions(cp, "r2", if_run_exists="restart")
    )
    assert fresh.output == "fresh" and await approvals.pending(cp, "r2") == []
    await park(cp, "r3", log)
    await cp.delete("r3")
    with pytest.raises(UserError, match="no stored run"):
        await approvals.pending(cp, "r3")
    assert log == []


ODD_ARGS = '{"amount": 5, "memo": "caf\\u00e9 \\ud83d\\udcb8 \\"q\\"", "to": {"iban": "DE89"}}'

REOPEN = """
import asyncio, sys
from lovia import SQLiteCheckpointer, approvals

async def main():
    async with SQLiteCheckpointer(sys.argv[1]) as cp:
        (c,) = await approvals.pending(cp, "r1")
        print(c.id, c.name, c.arguments)
        await approvals.decide(cp, "r1", {c.id: True})

asyncio.run(main())
"""


async def test_pending_requests_survive_a_restore_in_another_process(tmp_path: Path) -> None:
    """agent-framework#5818, #2485, #7618: pending requests lost, or failing to deserialize,
    after a restore. A call with awkward arguments (non-ASCII, an escaped quote, an emoji, a
    nested object) parks; a new process reads it back byte for byte and decides; the run
    resumes with exactly those arguments."""
    log: list[Any] = []
    db = tmp_path / "runs.db"

    @tool(needs_approval=True)
    def pay(amount: int, memo: str, to: dict[str, str]) -> str:
        """Pay."""
        log.append((amount, memo, to))
        return "paid"

    model = ScriptedProvider([call("pay", ODD_ARGS), text("done")])
    agent = Agent("a", model=model, tools=[pay], approval_handler=lambda c, x: "defer")
    async with SQLiteCheckpointer(db) as cp:
        with pytest.raises(ApprovalPending):
            await Runner.run(agent, "pay", checkpoint=CheckpointOptions(cp, "r1"))
        snap = await cp.load("r1")
        assert snap is not None
        assert RunHead.from_json(snap.head.to_json()) == snap.head
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", REOPEN, str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"call_pay pay {ODD_ARGS}"
    async with SQLiteCheckpointer(db) as cp:
        (stored,) = (await cp.load("r1")).pending_approvals  # type: ignore[union-attr]
        assert stored.digest == argument_digest("pay", ODD_ARGS) and stored.decision == "allow"
        assert (await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "r1"))).output == (
            "done"
        )
    assert log == [(5, 'café 💸 "q"', {"iban": "DE89"})]


@pytest.mark.parametrize("approve", [True, False])
async def test_a_resumed_approval_keeps_call_and_result_together_in_the_session(
    tmp_path: Path, approve: bool
) -> None:
    """openai-agents#4827: resuming an approval left a tool output without its call and broke
    the session. After park, decide and resume, the session holds the call followed by its
    result, and the next run's prompt is well formed."""
    log: list[Any] = []
    db = tmp_path / "s.db"
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as cp:
        agent = deferring(ScriptedProvider([call("pay", {"amount": 5})]), log)
        with pytest.raises(ApprovalPending):
            await Runner.run(
                agent,
                "pay 5",
                session=session,
                session_id="s",
                checkpoint=CheckpointOptions(cp, "r1"),
            )
        await approvals.decide(cp, "r1", {"call_pay": approve})
        resume = deferring(ScriptedProvider([text("settled")]), log)
        await Runner.run(
            resume, [], session=session, session_id="s", checkpoint=CheckpointOptions(cp, "r1")
        )
        (segment,) = await session.segments("s")
        types = [e.type for e in segment.entries]
        assert types.count("tool_call") == types.count("tool_result") == 1
        assert types.index("tool_call") < types.index("tool_result")
        model = ScriptedProvider([text("next")])
        await Runner.run(
            Agent("a", model=model, tools=[pay_tool(log)]),
            "and now?",
            session=session,
            session_id="s",
        )
        assert well_formed(model.calls[0])
        assert [m.role for m in model.calls[0]].count("tool") == 1
    assert len(log) == (1 if approve else 0)
