"""``lovia.workers``: agent runs on the PostgreSQL queue (procrastinate), a worker in this
process, each test in a schema of its own. Issues 8 and 34 (C6, C8, C10, S5)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
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
from lovia.workers import AgentQueue, enqueue_run

pytest.importorskip("procrastinate")


def lookup_agent(model: ScriptedProvider, calls: list[str]) -> Agent:
    @tool
    async def lookup(ctx: RunContext[Any], q: str) -> str:
        """Look q up."""
        calls.append(ctx.run_id)
        return f"found {q}"

    return Agent("support", model=model, tools=[lookup])


async def drain(queue: AgentQueue) -> None:
    """Run the queued jobs in this process until none is left."""
    await queue.run_worker(wait=False, install_signal_handlers=False)


def jobs(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT args->>'run_id', status::text FROM procrastinate_jobs ORDER BY id"
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


async def test_a_submitted_run_runs_with_its_checkpoint_and_session(queue_dsn: str) -> None:
    calls: list[str] = []
    model = ScriptedProvider([call("lookup", {"q": "order 42"}), text("refunded")])
    async with AgentQueue(lookup_agent(model, calls), queue_dsn) as queue:
        job = await queue.submit("r1", "refund order 42", session_id="user-7")
        assert job is not None
        assert (await queue.state("r1") or {})["state"] == "queued"
        await drain(queue)
        state = await queue.state("r1")
        assert state is not None and state["state"] == "completed"
        assert state["result"]["output"] == "refunded" and state["attempts"] == 1
        assert [e["state"] async for e in queue.follow("r1", timeout=5)] == ["completed"]
    assert calls == ["r1"]
    async with (
        PostgresCheckpointer(queue_dsn) as cp,
        PostgresSession(queue_dsn) as session,
    ):
        snap = await cp.load("r1")
        assert snap is not None and snap.status == "completed"
        assert [s.run_id for s in await session.segments("user-7")] == ["r1"]  # S5
        # its lease was given up with the job's end, not left to expire
        assert await cp.lease_holder("r1") is None


async def test_a_run_is_queued_once(queue_dsn: str) -> None:
    """C8: submitting a run again (before or after it ran) queues nothing and runs nothing."""
    calls: list[str] = []
    model = ScriptedProvider([call("lookup", {"q": "x"}), text("first answer")])
    async with AgentQueue(lookup_agent(model, calls), queue_dsn) as queue:
        assert await enqueue_run(queue, "r1", "question", session_id="s") is not None
        assert await queue.submit("r1", "question", session_id="s") is None
        await drain(queue)
        assert await queue.submit("r1", "other input", session_id="s") is None
        await drain(queue)
    assert calls == ["r1"]
    assert jobs(queue_dsn) == [("r1", "succeeded")]


async def test_submitting_inside_a_rolled_back_transaction_leaves_neither(
    queue_dsn: str,
) -> None:
    """The run's row and its job are one transaction with the caller's own writes."""
    model = ScriptedProvider([text("never")])
    async with AgentQueue(lookup_agent(model, []), queue_dsn) as queue:
        async with await psycopg.AsyncConnection.connect(queue_dsn) as conn:
            await conn.execute("CREATE TABLE orders (id text PRIMARY KEY)")
            await conn.commit()
            with pytest.raises(ZeroDivisionError):
                async with conn.transaction():
                    await conn.execute("INSERT INTO orders VALUES ('o1')")
                    assert await queue.submit("r-o1", "refund o1", conn=conn) is not None
                    raise ZeroDivisionError  # the caller fails after submitting
            async with conn.transaction():
                await conn.execute("INSERT INTO orders VALUES ('o2')")
                assert await queue.submit("r-o2", "refund o2", conn=conn) is not None
        assert await queue.state("r-o1") is None
        assert (await queue.state("r-o2") or {})["state"] == "queued"
    assert jobs(queue_dsn) == [("r-o2", "todo")]


async def test_a_cancelled_run_is_not_run(queue_dsn: str) -> None:
    calls: list[str] = []
    model = ScriptedProvider([call("lookup", {"q": "x"}), text("no")])
    async with AgentQueue(lookup_agent(model, calls), queue_dsn) as queue:
        await queue.submit("r1", "go")
        assert await queue.cancel("r1") is True
        assert await queue.cancel("r1") is False  # nothing left to cancel
        await drain(queue)
        assert (await queue.state("r1") or {})["state"] == "cancelled"
    assert calls == []
    assert jobs(queue_dsn) == [("r1", "cancelled")]


async def test_a_stopped_worker_hands_its_run_back_and_the_next_resumes_it(
    queue_dsn: str,
) -> None:
    """As on SIGTERM: past the graceful timeout the run is interrupted and its job goes back
    to the queue; the next worker resumes from the checkpoint, and the tool whose result was
    saved is not run again (C10)."""
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
    async with AgentQueue(agent, queue_dsn, lease_ttl=2.0) as queue:
        await queue.submit("r1", "go")
        first = asyncio.ensure_future(
            queue.run_worker(graceful_timeout=0.2, install_signal_handlers=False)
        )
        await entered.wait()
        queue.stop_worker()
        await first
        assert jobs(queue_dsn) == [("r1", "todo")]  # handed back, not failed
        assert (await queue.state("r1") or {})["state"] == "queued"
        async with PostgresCheckpointer(queue_dsn) as cp:
            snap = await cp.load("r1")
            assert snap is not None and snap.status == "interrupted"
        release.set()
        await drain(queue)
        state = await queue.state("r1")
        assert state is not None and state["state"] == "completed" and state["attempts"] == 2
    assert calls == ["r1", "slow", "slow"]  # lookup once; the unsaved slow call again
    async with PostgresCheckpointer(queue_dsn) as cp:
        snap = await cp.load("r1")
        assert snap is not None
        assert sum(isinstance(e, ToolResultEntry) for e in snap.entries) == 2


async def test_a_failing_run_is_retried_then_failed(queue_dsn: str) -> None:
    tries: list[int] = []

    @tool
    async def broken(ctx: RunContext[Any]) -> str:
        """Always fails hard."""
        tries.append(1)
        raise SystemError("disk on fire")

    class Boom:
        name = model = "boom"
        supports_json_schema = False

        async def stream(self, entries: Any, **kwargs: Any) -> Any:
            raise ConnectionError("provider down")
            yield  # pragma: no cover

    agent = Agent("a", model=Boom(), tools=[broken])  # type: ignore[arg-type]
    async with AgentQueue(agent, queue_dsn, max_attempts=2) as queue:
        await queue.submit("r1", "go")
        await drain(queue)  # the first try fails and is retried later (a backoff)
        assert jobs(queue_dsn) == [("r1", "todo")]
        assert (await queue.state("r1") or {})["state"] == "retrying"
        async with PostgresCheckpointer(queue_dsn) as cp:  # free for the retry at once
            assert await cp.lease_holder("r1") is None
            snap = await cp.load("r1")  # its input kept with the failure, for the retry
            assert snap is not None and snap.status == "interrupted"
        with psycopg.connect(queue_dsn, autocommit=True) as conn:  # skip the backoff
            conn.execute("UPDATE procrastinate_jobs SET scheduled_at = now()")
        await drain(queue)
        state = await queue.state("r1")
        assert state is not None and state["state"] == "failed" and state["attempts"] == 2
    assert jobs(queue_dsn) == [("r1", "failed")]


async def test_sqlite_runs_in_process_without_a_queue(tmp_path: Path) -> None:
    calls: list[str] = []
    model = ScriptedProvider([call("lookup", {"q": "x"}), text("local answer")])
    queue = AgentQueue(lookup_agent(model, calls), str(tmp_path / "app.db"))
    try:
        await queue.submit("r1", "go", session_id="s")
        states = [e["state"] async for e in queue.follow("r1", poll_interval=0.05, timeout=10)]
        assert states[-1] == "completed"
        assert await queue.submit("r1", "go", session_id="s") is None
        with pytest.raises(UserError) as info:
            await queue.run_worker()
        assert info.value.hint
    finally:
        await queue.shutdown()
    assert calls == ["r1"]


def test_bad_queue_options_are_user_errors() -> None:
    agent = Agent("a", model=ScriptedProvider([]))
    with pytest.raises(UserError):
        AgentQueue(agent, "app.db", lease_ttl=0)
    with pytest.raises(UserError):
        AgentQueue({}, "app.db")
    with pytest.raises(UserError) as info:
        AgentQueue(agent, "app.db", max_attempts=0)
    assert info.value.hint


async def test_submit_many_queues_a_burst_in_one_transaction_and_each_run_once(
    queue_dsn: str,
) -> None:
    """Batched submits: the new runs get a job each (their ids on their rows), a run
    submitted before gets ``None`` and no second job; a rolled-back batch leaves nothing."""
    calls: list[str] = []
    turns = [call("lookup", {"q": "x"}), text("ok")] * 3
    async with AgentQueue(lookup_agent(ScriptedProvider(turns), calls), queue_dsn) as queue:
        assert await queue.submit("b1", "first") is not None
        burst = [{"run_id": f"b{i}", "input": f"q{i}", "session_id": f"s{i}"} for i in (1, 2, 3)]
        ids = await queue.submit_many(burst)
        assert ids[0] is None and ids[1] is not None and ids[2] is not None
        with pytest.raises(UserError):
            await queue.submit_many([burst[1], burst[1]])
        async with await psycopg.AsyncConnection.connect(queue_dsn) as conn:
            with pytest.raises(RuntimeError):
                async with conn.transaction():
                    await queue.submit_many([{"run_id": "gone", "input": "x"}], conn=conn)
                    raise RuntimeError("the caller's transaction fails")
        assert await queue.state("gone") is None
        with psycopg.connect(queue_dsn) as conn:
            rows = conn.execute(
                f"SELECT r.run_id, r.job_id = j.id FROM {queue.runs_table} r "
                "JOIN procrastinate_jobs j ON j.args->>'run_id' = r.run_id ORDER BY r.run_id"
            ).fetchall()
        assert rows == [("b1", True), ("b2", True), ("b3", True)]
        # one at a time: the scripted model's turns are shared by the runs
        await queue.run_worker(wait=False, install_signal_handlers=False, concurrency=1)
        for run_id in ("b1", "b2", "b3"):
            assert (await queue.state(run_id) or {})["state"] == "completed"
    assert sorted(calls) == ["b1", "b2", "b3"]


async def test_a_watched_run_announces_each_saved_step(queue_dsn: str) -> None:
    """``park=True`` (a chat's page follows the run): besides its state changes, the worker
    announces each saved step (two model turns and a tool result here) on the channel."""
    from lovia.workers import CHANNEL

    calls: list[str] = []
    turns = [call("lookup", {"q": "x"}), text("ok")] * 2
    async with AgentQueue(lookup_agent(ScriptedProvider(turns), calls), queue_dsn) as queue:
        async with await psycopg.AsyncConnection.connect(queue_dsn, autocommit=True) as listen:
            await listen.execute(f"LISTEN {CHANNEL}")
            await queue.submit("plain", "go")
            await queue.run_worker(wait=False, install_signal_handlers=False, concurrency=1)
            await queue.submit("watched", "go", park=True)
            await queue.run_worker(wait=False, install_signal_handlers=False, concurrency=1)
            seen: list[str] = []
            async for note in listen.notifies(timeout=1.0):
                seen.append(note.payload)
    plain = seen.count(queue.table_prefix + "plain")
    watched = seen.count(queue.table_prefix + "watched")
    assert plain == 3  # queued, running, completed
    assert watched == plain + 3  # and each saved step
    assert calls == ["plain", "watched"]


class _CallThenAnswer:
    """A scripted model chosen by the transcript, so concurrent runs share it: a call of
    ``wait_both`` first, then the answer."""

    name = model = "call-then-answer"
    supports_json_schema = False

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        done = any(isinstance(e, ToolResultEntry) for e in entries)
        turn = text("answered") if done else call("wait_both", {}, call_id="c1")
        async for delta in ScriptedProvider([turn]).stream(entries, **kwargs):
            yield delta


async def test_two_runs_of_one_session_at_once_both_kept_with_their_timing(
    queue_dsn: str,
) -> None:
    """Two queued runs of one session computed at once: the second to append conflicts, and
    the worker keeps both in the session (S5); the one kept after the conflict records its
    timing in its segment like any other (the page shows each run's duration from it)."""
    arrived: list[str] = []
    both_in = asyncio.Event()

    @tool
    async def wait_both(ctx: RunContext[Any]) -> str:
        """Wait until both runs are inside their tool call."""
        arrived.append(ctx.run_id)
        if len(arrived) == 2:
            both_in.set()
        await asyncio.wait_for(both_in.wait(), 20)
        return "ok"

    agent = Agent("support", model=_CallThenAnswer(), tools=[wait_both])  # type: ignore[arg-type]
    async with AgentQueue(agent, queue_dsn) as queue:
        await queue.submit_many(
            [{"run_id": r, "input": "go", "session_id": "shared"} for r in ("k1", "k2")]
        )
        await queue.run_worker(wait=False, install_signal_handlers=False, concurrency=2)
        for run_id in ("k1", "k2"):
            assert (await queue.state(run_id) or {})["state"] == "completed"
    assert sorted(arrived) == ["k1", "k2"]  # each tool ran once
    async with PostgresSession(queue_dsn) as session:
        segments = await session.segments("shared")
    assert sorted(s.run_id for s in segments) == ["k1", "k2"]
    for segment in segments:
        timing = (segment.meta or {}).get("timing") or {}
        assert 0 < timing.get("started_at", 0) <= timing.get("finished_at", 0), segment.meta
