"""Approvals on ``AgentQueue`` (issue 15): a parked job frees its worker and is recorded as
awaiting approval (not failed, not retried); ``AgentQueue.decide`` records the decisions and
queues the resumption once; a duplicate resumption runs nothing twice. Real arq on a real
Redis, with the stores on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, UserError, approvals, tool
from lovia.stores.open import open_stores
from lovia.testing import ScriptedProvider, batch, call, text
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn

pytest.importorskip("arq")
from arq.jobs import Job, JobStatus
from arq.worker import Worker

from lovia.workers import AgentQueue, enqueue_run

pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated close:DeprecationWarning")


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    if request.param == "sqlite":
        yield str(tmp_path / "queue.db"), "lovia_"
        return
    dsn = postgres_dsn()
    prefix = fresh_prefix()
    yield dsn, prefix
    drop_prefix(dsn, prefix)


def payer(model: ScriptedProvider, paid: list[int], *, delay: float = 0.0) -> Agent:
    @tool(needs_approval=True)
    async def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        await asyncio.sleep(delay)
        return f"paid {amount}"

    @tool
    def note(text: str) -> str:
        """Write a note."""
        return "noted"

    return Agent("payer", model=model, tools=[pay, note], approval_handler=lambda c, ctx: "defer")


def make_queue(agent: Agent, db: tuple[str, str], tag: str) -> AgentQueue:
    path, prefix = db
    return AgentQueue(agent, path, table_prefix=prefix, queue_name=tag, busy_retry_after=5.0)


async def drain(queue: AgentQueue, *, max_jobs: int = 1) -> None:
    worker = Worker(
        **queue.worker_settings(
            job_timeout=60, poll_delay=0.01, handle_signals=False, burst=True, max_jobs=max_jobs
        )
    )
    try:
        await worker.async_run()
    finally:
        await worker.close()


async def stored(db: tuple[str, str], run_id: str) -> Any:
    session, cp = open_stores(db[0], table_prefix=db[1])
    try:
        return await cp.load(run_id), await session.segments("user-1")
    finally:
        await session.close()
        await cp.close()


async def test_a_parked_job_frees_its_worker_and_is_awaiting_approval_not_failed(
    db: tuple[str, str], redis: tuple[Any, str]
) -> None:
    pool, tag = redis
    paid: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 5}), text("other done")])
    queue = make_queue(payer(model, paid), db, tag)
    parked = await enqueue_run(pool, f"{tag}-a", "pay 5", session_id="user-1", queue_name=tag)
    other = await enqueue_run(pool, f"{tag}-b", "hello", queue_name=tag)
    assert parked is not None and other is not None
    await drain(queue, max_jobs=1)  # one slot: the second job runs only if the first let go
    summary = await parked.result(timeout=10)
    assert summary["status"] == "awaiting_approval"
    assert summary["pending"] == ["call_pay"] and summary["job_try"] == 1
    assert await parked.status() == JobStatus.complete  # finished, not failed or requeued
    assert (await other.result(timeout=10))["output"] == "other done"
    snap, _ = await stored(db, f"{tag}-a")
    assert snap.status == "interrupted"
    assert [p.call_id for p in snap.pending_approvals] == ["call_pay"]
    assert paid == []


@pytest.mark.parametrize("verdict", [True, False])
async def test_decide_queues_the_resumption_once_and_the_call_runs_once(
    db: tuple[str, str], redis: tuple[Any, str], verdict: bool
) -> None:
    pool, tag = redis
    paid: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 7}), text("finished")])
    queue = make_queue(payer(model, paid), db, tag)
    rid = f"{tag}-r"
    await enqueue_run(pool, rid, "pay 7", session_id="user-1", queue_name=tag)
    await drain(queue)
    queued = await queue.decide(rid, {"call_pay": verdict}, reason="checked")  # its own pool
    assert queued is not None
    job = Job(queued.job_id, pool)
    # deciding the same way again is a no-op and queues nothing new
    assert await queue.decide(rid, {"call_pay": verdict}, reason="checked", redis=pool) is None
    with pytest.raises(UserError, match="already decided"):
        await queue.decide(rid, {"call_pay": not verdict})
    assert await pool.zcard(tag) == 1
    await drain(queue)
    summary = await job.result(timeout=10)
    assert (summary["status"], summary["output"], summary["replayed"]) == (
        "completed",
        "finished",
        False,
    )
    assert paid == ([7] if verdict else [])
    tool_text = [m.content for m in model.calls[-1] if m.role == "tool"]
    assert tool_text == (["paid 7"] if verdict else ["Tool pay was not approved. Reason: checked"])
    snap, segments = await stored(db, rid)
    assert snap.status == "completed" and snap.pending_approvals == ()
    assert [s.run_id for s in segments] == [rid]  # the resumption kept the run's session
    # a late duplicate under another job id replays: nothing runs again
    again = await enqueue_run(
        pool, rid, [], session_id="user-1", queue_name=tag, job_id=f"{tag}-dup"
    )
    assert again is not None
    await drain(queue)
    assert (await again.result(timeout=10))["replayed"] is True
    assert paid == ([7] if verdict else [])
    with pytest.raises(UserError, match="not waiting"):
        await queue.decide(rid, {"call_pay": verdict})


async def test_two_resumptions_at_once_run_the_approved_call_once(
    db: tuple[str, str], redis: tuple[Any, str]
) -> None:
    """The decided run is queued twice under different job ids and two jobs run at once:
    the run lease lets one drive; the other waits and replays its answer."""
    pool, tag = redis
    paid: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 3}), text("finished")])
    queue = make_queue(payer(model, paid, delay=0.3), db, tag)
    rid = f"{tag}-r"
    await enqueue_run(pool, rid, "pay 3", session_id="user-1", queue_name=tag)
    await drain(queue)
    first = await queue.decide(rid, {"call_pay": True}, redis=pool)
    second = await enqueue_run(
        pool, rid, [], session_id="user-1", queue_name=tag, job_id=f"{tag}-x2"
    )
    assert first is not None and second is not None
    await drain(queue, max_jobs=2)
    results = [await first.result(timeout=10), await second.result(timeout=10)]
    assert sorted(r["replayed"] for r in results) == [False, True]
    assert {r["output"] for r in results} == {"finished"}
    assert paid == [3]
    _, segments = await stored(db, rid)
    assert [s.run_id for s in segments] == [rid]


async def test_a_partial_decision_queues_nothing_until_every_call_is_decided(
    db: tuple[str, str], redis: tuple[Any, str]
) -> None:
    pool, tag = redis
    paid: list[int] = []
    model = ScriptedProvider(
        [batch(("pay", {"amount": 1}, "p1"), ("pay", {"amount": 2}, "p2")), text("end")]
    )
    queue = make_queue(payer(model, paid), db, tag)
    rid = f"{tag}-r"
    await enqueue_run(pool, rid, "pay both", queue_name=tag)
    await drain(queue)
    assert await queue.decide(rid, {"p1": True}, redis=pool) is None
    assert await pool.zcard(tag) == 0
    session, cp = open_stores(db[0], table_prefix=db[1])
    try:
        assert [c.id for c in await approvals.pending(cp, rid)] == ["p2"]
    finally:
        await session.close()
        await cp.close()
    job = await queue.decide(rid, {"p2": False}, reason="one is enough", redis=pool)
    assert job is not None
    await drain(queue)
    assert (await job.result(timeout=10))["output"] == "end"
    assert paid == [1]


async def test_decide_refuses_unknown_runs_and_calls_and_queues_nothing(
    db: tuple[str, str], redis: tuple[Any, str]
) -> None:
    pool, tag = redis
    model = ScriptedProvider([call("pay", {"amount": 1})])
    queue = make_queue(payer(model, []), db, tag)
    rid = f"{tag}-r"
    await enqueue_run(pool, rid, "pay", queue_name=tag)
    await drain(queue)
    with pytest.raises(UserError, match="no stored run") as info:
        await queue.decide(f"{tag}-nope", {"call_pay": True}, redis=pool)
    assert info.value.hint
    with pytest.raises(UserError, match="no pending call"):
        await queue.decide(rid, {"other": True}, redis=pool)
    with pytest.raises(UserError):
        await queue.decide(rid, {}, redis=pool)
    assert await pool.zcard(tag) == 0
    assert await Job(f"{rid}:x", pool).status() == JobStatus.not_found


async def test_a_resumption_of_a_run_deleted_meanwhile_starts_nothing(
    db: tuple[str, str], redis: tuple[Any, str]
) -> None:
    """The run is deleted between the decision and the resumption's delivery: the job fails
    with UserError instead of starting the run afresh without its input."""
    pool, tag = redis
    paid: list[int] = []
    model = ScriptedProvider([call("pay", {"amount": 2}), text("never")])
    queue = make_queue(payer(model, paid), db, tag)
    rid = f"{tag}-r"
    await enqueue_run(pool, rid, "pay 2", queue_name=tag)
    await drain(queue)
    job = await queue.decide(rid, {"call_pay": True}, redis=pool)
    assert job is not None
    session, cp = open_stores(db[0], table_prefix=db[1])
    try:
        await cp.delete(rid)
    finally:
        await session.close()
        await cp.close()
    await drain(queue)
    with pytest.raises(UserError, match="no stored run"):
        await job.result(timeout=10)
    assert len(model.calls) == 1 and paid == []
    snap, _ = await stored(db, rid)
    assert snap is None
