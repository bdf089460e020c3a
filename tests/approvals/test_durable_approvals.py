"""Durable approvals (issue 15): park, decide later from anywhere, resume; a call runs once."""

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
    Runner,
    SQLiteCheckpointer,
    UserError,
    approvals,
    events,
    tool,
)
from lovia.approvals import argument_digest
from lovia.testing import ScriptedProvider, call, text

CHILD = Path(__file__).with_name("child.py")


def make_pay(log: list[int]) -> Any:
    @tool(needs_approval=True)
    def pay(amount: int) -> str:
        """Pay an amount."""
        log.append(amount)
        return f"paid {amount}"

    return pay


def run_child(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("verdict", ["yes", "no"])
def test_park_decide_resume_in_three_processes(tmp_path: Path, verdict: str) -> None:
    db = tmp_path / "runs.db"
    parked = run_child("park", str(db))
    assert parked.returncode == 3, parked.stderr
    assert "parked ['pay']" in parked.stdout
    assert not Path(f"{db}.paid").exists()  # nothing ran before the decision
    assert run_child("decide", str(db), verdict).returncode == 0
    resumed = run_child("resume", str(db))
    assert resumed.returncode == 0, resumed.stderr
    assert "output all done" in resumed.stdout
    again = run_child("resume", str(db))  # a replay runs nothing
    assert again.returncode == 0, again.stderr
    paid = Path(f"{db}.paid").read_text().split() if Path(f"{db}.paid").exists() else []
    assert paid == (["7"] if verdict == "yes" else [])


def test_a_process_killed_while_a_person_reads_the_approval_loses_nothing(tmp_path: Path) -> None:
    """SIGKILL while the stream's consumer holds an undecided approval: the call did not run;
    a restart asks again (here it parks), and once approved it runs exactly once."""
    db = tmp_path / "runs.db"
    killed = run_child("ask-and-die", str(db))
    assert killed.returncode == -9, killed.stderr
    assert not Path(f"{db}.paid").exists()
    reparked = run_child("repark", str(db))
    assert reparked.returncode == 3, reparked.stderr
    assert "parked ['pay']" in reparked.stdout
    assert not Path(f"{db}.paid").exists()  # a resume never runs an undecided call
    assert run_child("decide", str(db), "yes").returncode == 0
    for _ in range(2):  # the second is a replay
        resumed = run_child("resume", str(db))
        assert resumed.returncode == 0, resumed.stderr
        assert "output all done" in resumed.stdout
    assert Path(f"{db}.paid").read_text().split() == ["7"]


async def test_head_records_the_pending_call_with_its_digest(tmp_path: Path) -> None:
    log: list[int] = []
    cp = SQLiteCheckpointer(tmp_path / "r.db")
    agent = Agent(
        "a",
        model=ScriptedProvider([call("pay", {"amount": 3})]),
        tools=[make_pay(log)],
        approval_handler=lambda c, ctx: "defer",
    )
    with pytest.raises(ApprovalPending) as info:
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))
    assert info.value.run_id == "r1"
    assert [(c.name, c.arguments) for c in info.value.calls] == [("pay", '{"amount": 3}')]
    snap = await cp.load("r1")
    assert snap is not None and snap.status == "interrupted"
    (p,) = snap.pending_approvals
    assert p.tool_name == "pay" and p.arguments == '{"amount": 3}'
    assert p.digest == argument_digest("pay", '{"amount":3}')
    assert log == []
    await cp.close()


async def test_reject_reason_reaches_the_model_and_conflicting_decisions_are_refused() -> None:
    log: list[int] = []
    cp = InMemoryCheckpointer()
    pay = make_pay(log)
    agent = Agent(
        "a",
        model=ScriptedProvider([call("pay", {"amount": 9})]),
        tools=[pay],
        approval_handler=lambda c, ctx: "defer",
    )
    with pytest.raises(ApprovalPending):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))
    (pending,) = await approvals.pending(cp, "r1")
    await approvals.decide(cp, "r1", {pending.id: False}, reason="over the limit")
    await approvals.decide(cp, "r1", {pending.id: False})  # the same decision: a no-op
    with pytest.raises(UserError, match="already decided"):
        await approvals.decide(cp, "r1", {pending.id: True})
    with pytest.raises(UserError, match="no pending call"):
        await approvals.decide(cp, "r1", {"nope": True})
    with pytest.raises(UserError, match="no stored run"):
        await approvals.pending(cp, "unknown")
    model = ScriptedProvider([text("ok, not paid")])
    resumed = Agent("a", model=model, tools=[pay])
    result = await Runner.run(resumed, [], checkpoint=CheckpointOptions(cp, "r1"))
    assert result.output == "ok, not paid"
    tool_msg = [m for m in model.calls[0] if m.role == "tool"][-1]
    assert tool_msg.content == "Tool pay was not approved. Reason: over the limit"
    assert log == []
    assert await approvals.pending(cp, "r1") == []


async def test_calls_that_need_no_approval_finish_before_the_run_parks() -> None:
    log: list[int] = []
    ran: list[str] = []

    @tool
    def note(text: str) -> str:
        """Write a note."""
        ran.append(text)
        return "noted"

    cp = InMemoryCheckpointer()
    from lovia.testing import batch

    agent = Agent(
        "a",
        model=ScriptedProvider([batch(("pay", {"amount": 1}), ("note", {"text": "hi"}))]),
        tools=[make_pay(log), note],
        approval_handler=lambda c, ctx: "defer",
    )
    with pytest.raises(ApprovalPending):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))
    assert ran == ["hi"] and log == []
    snap = await cp.load("r1")
    assert snap is not None
    assert [e.type for e in snap.entries].count("tool_result") == 1


async def test_streaming_consumer_decides_in_process() -> None:
    for action, expected in (("approve", [4]), ("reject", [])):
        log: list[int] = []
        agent = Agent(
            "a",
            model=ScriptedProvider([call("pay", {"amount": 4}), text("end")]),
            tools=[make_pay(log)],
        )
        handle = Runner.stream(agent, "go")
        async for ev in handle:
            if isinstance(ev, events.ApprovalRequired):
                assert ev.call.name == "pay"
                getattr(ev, action)()
        assert (await handle.result()).output == "end"
        assert log == expected


async def test_nobody_deciding_denies_and_a_run_without_checkpoint_cannot_park() -> None:
    log: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 2}), text("end")])
    agent = Agent("a", model=model, tools=[make_pay(log)])
    assert (await Runner.run(agent, "go")).output == "end"
    assert log == []
    deferring = Agent(
        "b",
        model=ScriptedProvider([call("pay", {"amount": 2})]),
        tools=[make_pay(log)],
        approval_handler=lambda c, ctx: "defer",
    )
    with pytest.raises(UserError, match="no checkpoint"):
        await Runner.run(deferring, "go")
    assert log == []


@pytest.mark.parametrize("answer, runs", [(True, 1), ("allow", 1), (False, 0), ("deny", 0)])
async def test_approval_handler_answers(answer: Any, runs: int) -> None:
    log: list[int] = []
    agent = Agent(
        "a",
        model=ScriptedProvider([call("pay", {"amount": 5}), text("end")]),
        tools=[make_pay(log)],
        approval_handler=lambda c, ctx: answer,
    )
    await Runner.run(agent, "go")
    assert len(log) == runs


def test_cli_lists_and_decides_parked_calls(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    assert run_child("park", str(db)).returncode == 3
    lovia = [sys.executable, "-c", "import sys, lovia.cli; sys.exit(lovia.cli.main())"]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*lovia, *args, "--db", str(db)], capture_output=True, text=True)

    listed = cli("runs", "approvals")
    assert listed.returncode == 0 and "call_pay" in listed.stdout and "pay(" in listed.stdout
    assert "awaiting approval" in cli("runs", "list").stdout
    assert cli("runs", "approve", "job-1", "nope").returncode == 2
    assert cli("runs", "approve", "job-1", "call_pay").returncode == 0
    assert cli("runs", "reject", "job-1", "call_pay").returncode == 1  # conflicting
    assert "no tool calls" in cli("runs", "approvals").stdout
    assert run_child("resume", str(db)).returncode == 0
    assert Path(f"{db}.paid").read_text().split() == ["7"]


class OwnCheckpointer:
    """A checkpointer of one's own: the protocol and a lease, no ``update_head``; its loads
    are slow, so two unguarded deciders would both read the call undecided."""

    def __init__(self) -> None:
        self.inner = InMemoryCheckpointer()

    async def append(self, run_id: str, entries: Any, head: Any) -> None:
        await self.inner.append(run_id, entries, head)

    async def load(self, run_id: str) -> Any:
        snap = await self.inner.load(run_id)
        await asyncio.sleep(0.05)
        return snap

    async def delete(self, run_id: str) -> None:
        await self.inner.delete(run_id)

    async def acquire_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        return bool(await self.inner.acquire_lease(run_id, owner, ttl))

    async def renew_lease(self, run_id: str, owner: str, ttl: float) -> bool:
        return bool(await self.inner.renew_lease(run_id, owner, ttl))

    async def release_lease(self, run_id: str, owner: str) -> None:
        await self.inner.release_lease(run_id, owner)

    async def lease_holder(self, run_id: str) -> str | None:
        holder = await self.inner.lease_holder(run_id)
        return None if holder is None else str(holder)


async def test_a_checkpointer_of_ones_own_decides_under_the_run_lease() -> None:
    """Without update_head, decide holds the run's lease: two opposite verdicts at once, one
    wins and the other gets UserError; the resumed run follows the winner."""
    log: list[int] = []
    cp = OwnCheckpointer()
    agent = Agent(
        "a",
        model=ScriptedProvider([call("pay", {"amount": 4}), text("end")]),
        tools=[make_pay(log)],
        approval_handler=lambda c, ctx: "defer",
    )
    with pytest.raises(ApprovalPending):
        await Runner.run(agent, "go", checkpoint=CheckpointOptions(cp, "r1"))
    outcomes = await asyncio.gather(
        approvals.decide(cp, "r1", {"call_pay": True}),
        approvals.decide(cp, "r1", {"call_pay": False}),
        return_exceptions=True,
    )
    errors = [o for o in outcomes if isinstance(o, UserError)]
    assert len(errors) == 1 and outcomes.count(None) == 1
    approved = outcomes[0] is None
    assert (await Runner.run(agent, [], checkpoint=CheckpointOptions(cp, "r1"))).output == "end"
    assert log == ([4] if approved else [])


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
async def test_a_decision_made_while_a_worker_resumes_the_run_is_not_lost(
    tmp_path: Path, kind: str
) -> None:
    """A person rejects while a worker has loaded the parked run and asks about the call
    again (its handler defers once more). The decision waits for the run's lease, so the
    worker's save cannot write over it; a later approval conflicts, and the call never runs."""
    log: list[int] = []
    cp: Any = SQLiteCheckpointer(tmp_path / "r.db") if kind == "sqlite" else InMemoryCheckpointer()
    first = Agent(
        "a",
        model=ScriptedProvider([call("pay", {"amount": 6})]),
        tools=[make_pay(log)],
        approval_handler=lambda c, ctx: "defer",
    )
    with pytest.raises(ApprovalPending):
        await Runner.run(first, "go", checkpoint=CheckpointOptions(cp, "r1"))
    asked, deciding = asyncio.Event(), asyncio.Event()

    async def handler(c: Any, ctx: Any) -> str:
        asked.set()
        await deciding.wait()
        await asyncio.sleep(0.2)  # the decision is waiting meanwhile
        return "defer"

    async def person() -> None:
        await asked.wait()
        deciding.set()
        await approvals.decide(cp, "r1", {"call_pay": False}, reason="no")

    worker = Agent(
        "a", model=ScriptedProvider([text("end")]), tools=[make_pay(log)], approval_handler=handler
    )
    resumed = Runner.run(worker, [], checkpoint=CheckpointOptions(cp, "r1"))
    outcomes = await asyncio.gather(resumed, person(), return_exceptions=True)
    assert isinstance(outcomes[0], ApprovalPending) and outcomes[1] is None
    (stored,) = (await cp.load("r1")).pending_approvals
    assert (stored.decision, stored.reason) == ("deny", "no")
    with pytest.raises(UserError, match="already decided"):
        await approvals.decide(cp, "r1", {"call_pay": True})
    assert (await Runner.run(worker, [], checkpoint=CheckpointOptions(cp, "r1"))).output == "end"
    assert log == []
    if kind == "sqlite":
        await cp.close()
