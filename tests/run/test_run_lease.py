"""Run leases through the Runner: while one worker drives a run, another ``Runner.run`` with
that id waits (then replays) or fails fast with ``RunBusy``; a dead holder's lease is taken
over and the run resumed; a worker whose lease was taken over stops writing. Issue 8."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, RunBusy, RunContext, Runner, ToolResultEntry, tool
from lovia.events import RunFailed
from lovia.testing import ScriptedProvider, call, text
from tests.stores.backends import Backend, checkpoint_backend, checkpointer

from .checkpoint_jobs import RESUME_SCRIPT, Job, interrupt

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name


class Gate:
    """A tool that blocks until the test opens the gate, so a run stays in flight."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()

    def agent(self) -> Agent:
        @tool
        async def slow(ctx: RunContext[Any]) -> str:
            """Wait for the gate."""
            self.entered.set()
            await self.open.wait()
            return "slow done"

        return Agent(
            name="worker",
            model=ScriptedProvider([call("slow", {}), text("first answer")]),
            tools=[slow],
        )


def idle_agent() -> Agent:
    """An agent whose model must never be called (an empty script raises if it is)."""
    return Agent(name="worker", model=ScriptedProvider([]), tools=[Gate().agent().tools[0]])


async def test_a_second_run_fails_fast_while_the_first_holds_the_lease(checkpointer: Any) -> None:
    gate = Gate()
    first = asyncio.ensure_future(
        Runner.run(gate.agent(), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    )
    await gate.entered.wait()
    before = await checkpointer.load("r1")
    with pytest.raises(RunBusy) as info:
        await Runner.run(
            idle_agent(), "go", checkpoint=CheckpointOptions(checkpointer, "r1", on_busy="fail")
        )
    assert info.value.hint and "lease_ttl" in info.value.hint
    assert await checkpointer.load("r1") == before  # the busy run wrote nothing
    gate.open.set()
    assert (await first).output == "first answer"


async def test_a_second_run_waits_for_the_first_and_then_replays(checkpointer: Any) -> None:
    """C6/C8 with two workers: the duplicate waits for the lease, then replays the result."""
    gate = Gate()
    first = asyncio.ensure_future(
        Runner.run(gate.agent(), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    )
    await gate.entered.wait()
    second = asyncio.ensure_future(
        Runner.run(idle_agent(), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    )
    await asyncio.sleep(0.1)
    assert not second.done()  # it waits while the first drives the run
    gate.open.set()
    done_first, done_second = await first, await second
    assert done_second.output == done_first.output == "first answer"
    assert done_second.replayed and not done_first.replayed


async def test_waiting_longer_than_wait_timeout_is_run_busy(checkpointer: Any) -> None:
    gate = Gate()
    first = asyncio.ensure_future(
        Runner.run(gate.agent(), "go", checkpoint=CheckpointOptions(checkpointer, "r1"))
    )
    await gate.entered.wait()
    with pytest.raises(RunBusy, match="waited"):
        await Runner.run(
            idle_agent(), "go", checkpoint=CheckpointOptions(checkpointer, "r1", wait_timeout=0.2)
        )
    gate.open.set()
    await first


async def test_a_busy_stream_ends_with_one_run_failed(checkpointer: Any) -> None:
    assert await checkpointer.acquire_lease("r1", "someone-else", 30.0)
    handle = Runner.stream(
        idle_agent(), "go", checkpoint=CheckpointOptions(checkpointer, "r1", on_busy="fail")
    )
    events = [e async for e in handle]
    assert len(events) == 1 and isinstance(events[0], RunFailed)
    with pytest.raises(RunBusy):
        await handle.result()


async def test_a_dead_holders_lease_is_taken_over_and_the_run_resumed(
    checkpoint_backend: Backend,
) -> None:
    """A crashed worker leaves its lease; once it expires the next worker resumes the run."""
    checkpointer: Any = checkpoint_backend.open()
    job = Job()
    await interrupt(job, checkpointer, "r1")
    assert await checkpointer.acquire_lease("r1", "crashed-worker", 30.0)  # never renewed
    checkpoint_backend.clock.advance(31.0)
    agent, model = job.agent(list(RESUME_SCRIPT))
    result = await Runner.run(
        agent, "go", checkpoint=CheckpointOptions(checkpointer, "r1", on_busy="fail")
    )
    assert result.output == "all done"
    assert job.names() == ["step", "stop", "stop"]  # resumed, not restarted
    assert len(model.calls) == 1


async def test_the_lease_is_released_when_the_run_ends(checkpointer: Any) -> None:
    agent = Agent(name="worker", model=ScriptedProvider([text("done")]))
    await Runner.run(agent, "go", checkpoint=CheckpointOptions(checkpointer, "ok"))
    assert await checkpointer.acquire_lease("ok", "next-worker", 30.0)
    failing = Agent(name="worker", model=ScriptedProvider([]))
    with pytest.raises(AssertionError):
        await Runner.run(failing, "go", checkpoint=CheckpointOptions(checkpointer, "bad"))
    assert await checkpointer.acquire_lease("bad", "next-worker", 30.0)


async def test_the_heartbeat_keeps_a_long_run_leased(checkpoint_backend: Backend) -> None:
    """A run longer than its lease_ttl keeps the lease while it renews it: with the clock
    moved far past the ttl the lease has run out, and only the heartbeat's renewal brings the
    worker back as the holder before an intruder may take it."""
    checkpointer: Any = checkpoint_backend.open()
    gate = Gate()
    opts = CheckpointOptions(checkpointer, "r1", lease_ttl=0.6)  # renewed every 0.2 s
    first = asyncio.ensure_future(Runner.run(gate.agent(), "go", checkpoint=opts))
    await gate.entered.wait()
    owner = await checkpointer.lease_holder("r1")
    assert owner is not None
    checkpoint_backend.clock.advance(3600.0)
    assert await checkpointer.lease_holder("r1") is None  # run out on the moved clock
    for _ in range(200):  # the next renewal (the test fails here if none comes)
        if await checkpointer.lease_holder("r1") == owner:
            break
        await asyncio.sleep(0.05)
    assert await checkpointer.lease_holder("r1") == owner
    assert await checkpointer.acquire_lease("r1", "intruder", 30.0) is False
    gate.open.set()
    assert (await first).output == "first answer"


async def test_a_worker_whose_lease_was_taken_over_stops_writing(
    checkpoint_backend: Backend,
) -> None:
    """The stale worker's next save raises RunBusy instead of writing over the new holder."""
    checkpointer: Any = checkpoint_backend.open()

    @tool
    async def stall(ctx: RunContext[Any]) -> str:
        """Stall past the lease (as a stuck worker would), while another worker takes over."""
        checkpoint_backend.clock.advance(31.0)
        assert await checkpointer.acquire_lease(ctx.run_id, "new-holder", 30.0)
        return "stalled"

    agent = Agent(
        name="worker",
        model=ScriptedProvider([call("stall", {}), text("never")]),
        tools=[stall],
    )
    opts = CheckpointOptions(checkpointer, "r1", lease_ttl=30.0)
    with pytest.raises(RunBusy, match="taken over"):
        await Runner.run(agent, "go", checkpoint=opts)
    snap = await checkpointer.load("r1")
    assert snap is not None
    assert not any(isinstance(e, ToolResultEntry) for e in snap.entries)
    assert snap.status == "running"  # not overwritten with this worker's failure


def test_lease_options_are_checked() -> None:
    from lovia import InMemoryCheckpointer, UserError

    cp = InMemoryCheckpointer()
    bad_options: list[dict[str, Any]] = [
        {"lease_ttl": 0},
        {"lease_ttl": -1.0},
        {"on_busy": "queue"},
        {"wait_timeout": 0},
    ]
    for bad in bad_options:
        with pytest.raises(UserError):
            CheckpointOptions(cp, "r", **bad)
