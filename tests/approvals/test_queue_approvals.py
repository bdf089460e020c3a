"""Approvals on ``AgentQueue`` (issues 15 and 34): a parked job frees its worker and is
recorded as awaiting approval (not failed, not retried); ``AgentQueue.decide`` records the
decisions and queues the resumption once; a resumption only resumes. The PostgreSQL queue
with a worker in this process, in a schema of its own."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from lovia import Agent, StoreError, UserError, approvals, tool
from lovia.stores.open import open_stores
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.workers import AgentQueue
from tests.postgres.conftest import queue_dsn

pytest.importorskip("procrastinate")
__all__ = ["queue_dsn"]  # the fixture


def payer(model: ScriptedProvider, paid: list[int]) -> Agent:
    @tool(needs_approval=True)
    async def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    return Agent("payer", model=model, tools=[pay], approval_handler=lambda c, ctx: "defer")


async def drain(queue: AgentQueue, concurrency: int = 1) -> None:
    await queue.run_worker(wait=False, install_signal_handlers=False, concurrency=concurrency)


def jobs(dsn: str) -> list[tuple[str, bool, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT args->>'run_id', (args->>'resume_only')::bool, status::text "
            "FROM procrastinate_jobs ORDER BY id"
        ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


async def state(queue: AgentQueue, run_id: str) -> Any:
    found = await queue.state(run_id)
    assert found is not None
    return found


async def test_a_parked_run_frees_its_worker_and_awaits_approval(queue_dsn: str) -> None:
    paid: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 5}), text("other done")])
    async with AgentQueue(payer(model, paid), queue_dsn) as queue:
        await queue.submit("a", "pay 5", session_id="user-1")
        await queue.submit("b", "hello")
        await drain(queue)  # one slot: the second job runs only if the first let go
        parked = await state(queue, "a")
        assert parked["state"] == "awaiting_approval"
        assert parked["result"]["pending"] == ["call_pay"]
        assert (await state(queue, "b"))["result"]["output"] == "other done"
    assert jobs(queue_dsn) == [("a", False, "succeeded"), ("b", False, "succeeded")]
    assert paid == []


@pytest.mark.parametrize("verdict", [True, False])
async def test_decide_queues_the_resumption_once_and_the_call_runs_once(
    queue_dsn: str, verdict: bool
) -> None:
    paid: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 7}), text("finished")])
    async with AgentQueue(payer(model, paid), queue_dsn) as queue:
        await queue.submit("r", "pay 7", session_id="user-1")
        await drain(queue)
        first, second = await asyncio.gather(
            queue.decide("r", {"call_pay": verdict}, reason="checked"),
            queue.decide("r", {"call_pay": verdict}, reason="checked"),
        )
        assert sorted([first is None, second is None]) == [False, True]  # queued once
        with pytest.raises(UserError, match="already decided"):
            await queue.decide("r", {"call_pay": not verdict})
        await drain(queue)
        done = await state(queue, "r")
        assert (done["state"], done["result"]["output"]) == ("completed", "finished")
        with pytest.raises(UserError, match="not waiting"):
            await queue.decide("r", {"call_pay": verdict})
    assert jobs(queue_dsn) == [("r", False, "succeeded"), ("r", True, "succeeded")]
    assert paid == ([7] if verdict else [])
    session, cp = open_stores(queue_dsn)
    try:
        assert [s.run_id for s in await session.segments("user-1")] == ["r"]
    finally:
        await session.close()
        await cp.close()


async def test_a_partial_decision_queues_nothing_until_every_call_is_decided(
    queue_dsn: str,
) -> None:
    paid: list[int] = []
    model = ScriptedProvider(
        [batch(("pay", {"amount": 1}, "p1"), ("pay", {"amount": 2}, "p2")), text("end")]
    )
    async with AgentQueue(payer(model, paid), queue_dsn) as queue:
        await queue.submit("r", "pay both")
        await drain(queue)
        assert await queue.decide("r", {"p1": True}) is None
        assert len(jobs(queue_dsn)) == 1
        session, cp = open_stores(queue_dsn)
        try:
            assert [c.id for c in await approvals.pending(cp, "r")] == ["p2"]
        finally:
            await session.close()
            await cp.close()
        assert await queue.decide("r", {"p2": False}, reason="one is enough") is not None
        await drain(queue)
        assert (await state(queue, "r"))["result"]["output"] == "end"
    assert paid == [1]


async def test_decide_refuses_unknown_runs_and_calls_and_queues_nothing(queue_dsn: str) -> None:
    model = ScriptedProvider([call("pay", {"amount": 1})])
    async with AgentQueue(payer(model, []), queue_dsn) as queue:
        await queue.submit("r", "pay")
        await drain(queue)
        with pytest.raises(UserError, match="no stored run") as info:
            await queue.decide("nope", {"call_pay": True})
        assert info.value.hint
        with pytest.raises(UserError, match="no pending call"):
            await queue.decide("r", {"other": True})
        with pytest.raises(UserError):
            await queue.decide("r", {})
    assert jobs(queue_dsn) == [("r", False, "succeeded")]


async def test_a_resumption_of_a_run_deleted_meanwhile_starts_nothing(queue_dsn: str) -> None:
    """The run is deleted between the decision and the resumption's delivery: the job fails
    (UserError, not retried) instead of starting the run afresh without its input."""
    paid: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 2}), text("never")])
    async with AgentQueue(payer(model, paid), queue_dsn) as queue:
        await queue.submit("r", "pay 2")
        await drain(queue)
        assert await queue.decide("r", {"call_pay": True}) is not None
        session, cp = open_stores(queue_dsn)
        try:
            await cp.delete("r")
        finally:
            await session.close()
            await cp.close()
        await drain(queue)
        assert (await state(queue, "r"))["state"] == "failed"
    assert jobs(queue_dsn) == [("r", False, "succeeded"), ("r", True, "failed")]
    assert len(model.calls) == 1 and paid == []


async def test_a_decision_whose_job_cannot_be_queued_is_not_recorded(queue_dsn: str) -> None:
    """The decision and the resumption's job are one transaction: a failure between the two
    statements (here the job's INSERT refused) leaves neither; deciding again queues both."""
    paid: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 3}), text("done")])
    async with AgentQueue(payer(model, paid), queue_dsn) as queue:
        await queue.submit("r", "pay 3")
        await drain(queue)
        with psycopg.connect(queue_dsn, autocommit=True) as conn:
            conn.execute(
                "CREATE FUNCTION refuse_resume() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN RAISE EXCEPTION 'no resumptions now'; END $$; "
                "CREATE TRIGGER refuse_resume BEFORE INSERT ON procrastinate_jobs FOR EACH ROW "
                "WHEN (NEW.args->>'resume_only' = 'true') EXECUTE FUNCTION refuse_resume()"
            )
        with pytest.raises(StoreError, match="no resumptions now"):
            await queue.decide("r", {"call_pay": True})
        session, cp = open_stores(queue_dsn)
        try:
            assert [c.id for c in await approvals.pending(cp, "r")] == ["call_pay"]  # undecided
        finally:
            await session.close()
            await cp.close()
        assert jobs(queue_dsn) == [("r", False, "succeeded")]
        assert (await state(queue, "r"))["state"] == "awaiting_approval"
        with psycopg.connect(queue_dsn, autocommit=True) as conn:
            conn.execute("DROP TRIGGER refuse_resume ON procrastinate_jobs")
        assert await queue.decide("r", {"call_pay": True}) is not None
        await drain(queue)
        assert (await state(queue, "r"))["result"]["output"] == "done"
    assert paid == [3]
