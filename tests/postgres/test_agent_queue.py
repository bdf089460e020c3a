"""``lovia.workers``: agent jobs on arq with a real Redis and PostgreSQL, one worker in this
process (a burst worker drains the queue and returns). Issue 8 (C6, C8, C10, S5)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from lovia import (
    Agent,
    PostgresCheckpointer,
    PostgresSession,
    RunContext,
    ToolResultEntry,
    UserError,
    tool,
)
from lovia.testing import ScriptedProvider, call, text
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn

pytest.importorskip("arq")
from arq.jobs import Job, JobStatus
from arq.worker import Worker

from lovia.workers import AgentQueue, enqueue_run

# arq 0.28's Worker.close() still calls redis-py's deprecated close(); not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated close:DeprecationWarning")


@pytest.fixture
def db() -> Iterator[tuple[str, str]]:
    dsn = postgres_dsn()
    prefix = fresh_prefix()
    yield dsn, prefix
    drop_prefix(dsn, prefix)


def lookup_agent(model: ScriptedProvider, calls: list[str]) -> Agent:
    @tool
    async def lookup(ctx: RunContext[Any], q: str) -> str:
        """Look q up."""
        calls.append(ctx.run_id)
        return f"found {q}"

    return Agent("support", model=model, tools=[lookup])


def worker_for(queue: AgentQueue, **settings: Any) -> Worker:
    return Worker(
        **queue.worker_settings(job_timeout=60, poll_delay=0.01, handle_signals=False, **settings)
    )


async def drain(queue: AgentQueue) -> None:
    worker = worker_for(queue, burst=True)
    try:
        await worker.async_run()
    finally:
        await worker.close()


async def test_a_job_runs_the_agent_with_its_checkpoint_and_session(
    db: tuple[str, str], redis: tuple[Any, str]
) -> None:
    dsn, prefix = db
    pool, tag = redis
    calls: list[str] = []
    model = ScriptedProvider([call("lookup", {"q": "order 42"}), text("refunded")])
    queue = AgentQueue(lookup_agent(model, calls), dsn, table_prefix=prefix, queue_name=tag)
    rid = f"{tag}-r1"
    job = await enqueue_run(pool, rid, "refund order 42", session_id="user-7", queue_name=tag)
    assert job is not None
    await drain(queue)
    summary = await job.result(timeout=10)
    assert summary == {
        "run_id": rid,
        "status": "completed",
        "output": "refunded",
        "replayed": False,
        "turns": 2,
        "job_try": 1,
    }
    assert calls == [rid]
    async with (
        PostgresCheckpointer(dsn, table_prefix=prefix) as cp,
        PostgresSession(dsn, table_prefix=prefix) as session,
    ):
        snap = await cp.load(rid)
        assert snap is not None and snap.status == "completed"
        assert [s.run_id for s in await session.segments("user-7")] == [rid]


async def test_a_second_delivery_of_a_completed_run_replays_it(
    db: tuple[str, str], redis: tuple[Any, str]
) -> None:
    """C8: the model is not called again (its script is used up) and the tool does not run."""
    dsn, prefix = db
    pool, tag = redis
    calls: list[str] = []
    model = ScriptedProvider([call("lookup", {"q": "x"}), text("first answer")])
    queue = AgentQueue(lookup_agent(model, calls), dsn, table_prefix=prefix, queue_name=tag)
    rid = f"{tag}-r1"
    await enqueue_run(pool, rid, "question", session_id="s", queue_name=tag)
    await drain(queue)
    # arq itself refuses the same job id while its result is kept...
    assert await enqueue_run(pool, rid, "question", session_id="s", queue_name=tag) is None
    # ...and a delivery under another id replays instead of running twice
    again = await enqueue_run(
        pool, rid, "ignored new input", session_id="s", queue_name=tag, job_id=f"{rid}-again"
    )
    assert again is not None
    await drain(queue)
    summary = await again.result(timeout=10)
    assert (summary["output"], summary["replayed"]) == ("first answer", True)
    assert calls == [rid]
    async with PostgresSession(dsn, table_prefix=prefix) as session:
        assert [s.run_id for s in await session.segments("s")] == [rid]  # S5


# Worker.close() cancels arq's polling task, which may be inside one of arq's own Redis
# pipelines at that moment (it polls every 10 ms here); the cancelled pipeline keeps its
# connection and redis-py warns when it is collected. arq's shutdown, not lovia's.
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function Redis.__del__:pytest.PytestUnraisableExceptionWarning"
)
async def test_a_job_cancelled_by_a_worker_shutdown_is_requeued_and_resumed(
    db: tuple[str, str], redis: tuple[Any, str]
) -> None:
    """A stopped worker's job goes back to the queue at once; the next worker resumes the
    run from its checkpoint: the finished tool call is not repeated (C10)."""
    dsn, prefix = db
    pool, tag = redis
    calls: list[str] = []
    entered, release = asyncio.Event(), asyncio.Event()

    @tool
    async def slow(ctx: RunContext[Any]) -> str:
        """Wait until released (the first worker is stopped meanwhile)."""
        calls.append("slow")
        entered.set()
        await release.wait()
        return "slow done"

    base = lookup_agent(
        ScriptedProvider([call("lookup", {"q": "a"}), call("slow", {}), text("all done")]),
        calls,
    )
    agent = base.clone(tools=[*base.tools, slow])
    queue = AgentQueue(agent, dsn, table_prefix=prefix, queue_name=tag)
    rid = f"{tag}-r1"
    job = await enqueue_run(pool, rid, "go", queue_name=tag)
    assert job is not None
    first = worker_for(queue)
    running = asyncio.ensure_future(first.async_run())
    await entered.wait()
    await first.close()  # as on SIGTERM: cancel the running jobs, stop polling, shut down
    await asyncio.gather(running, return_exceptions=True)
    assert await job.status() == JobStatus.queued  # back in the queue, not failed
    async with PostgresCheckpointer(dsn, table_prefix=prefix) as cp:
        snap = await cp.load(rid)
        assert snap is not None and snap.status == "interrupted"
    release.set()
    await drain(queue)
    summary = await Job(rid, pool).result(timeout=10)
    assert (summary["output"], summary["job_try"]) == ("all done", 2)
    assert calls == [rid, "slow", "slow"]  # lookup once; the dangling slow call again
    async with PostgresCheckpointer(dsn, table_prefix=prefix) as cp:
        snap = await cp.load(rid)
        assert snap is not None
        assert sum(isinstance(e, ToolResultEntry) for e in snap.entries) == 2


def test_bad_queue_options_are_user_errors() -> None:
    agent = Agent("a", model=ScriptedProvider([]))
    with pytest.raises(UserError):
        AgentQueue(agent, "app.db", lease_ttl=0)
    with pytest.raises(UserError):
        AgentQueue({}, "app.db")
    queue = AgentQueue(agent, "app.db", busy_retry_after=30)
    with pytest.raises(UserError) as info:
        queue.worker_settings(job_timeout=10)
    assert info.value.hint
