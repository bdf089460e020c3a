"""Lease fencing: a worker whose lease was taken over cannot save, whatever its clock says;
a wall-clock step cannot take a live lease over (issue 14, finding 7)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lovia.checkpointer import RunHead, RunTakenOver
from lovia.errors import RunBusy
from lovia.transcript import InputEntry, ToolResultEntry

from .backends import Backend, checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]

ROOT = Path(__file__).resolve().parents[2]


async def test_a_worker_that_lost_its_lease_cannot_save(
    checkpoint_backend: Backend,
) -> None:
    """A holds the lease and stalls past its ttl; B takes the run over and saves; A's next
    save is refused whole (nothing of it lands), B's saves go on."""
    store_a, store_b = checkpoint_backend.open(), checkpoint_backend.open()
    await store_a.append("r1", [InputEntry(content="go")], RunHead("w"))
    a_has_lease, b_took_over = asyncio.Event(), asyncio.Event()

    async def worker_a() -> None:
        assert await store_a.acquire_lease("r1", "worker-a", 30.0)  # type: ignore[attr-defined]
        await store_a.append("r1", [ToolResultEntry(call_id="c0", output="a0")], RunHead("w"))
        a_has_lease.set()
        await b_took_over.wait()
        await store_a.append("r1", [ToolResultEntry(call_id="c1", output="a1")], RunHead("w"))

    async def worker_b() -> None:
        await a_has_lease.wait()
        checkpoint_backend.clock.advance(31.0)  # A stalls: its lease expires
        assert await store_b.acquire_lease("r1", "worker-b", 30.0)  # type: ignore[attr-defined]
        await store_b.append("r1", [ToolResultEntry(call_id="c1", output="b1")], RunHead("w"))
        b_took_over.set()

    task_a = asyncio.ensure_future(worker_a())
    await worker_b()
    with pytest.raises(RunTakenOver) as info:
        await task_a
    assert isinstance(info.value, RunBusy) and info.value.hint
    assert "worker-b" in info.value.message
    snap = await store_b.load("r1")
    assert snap is not None
    outputs = [e.output for e in snap.entries if isinstance(e, ToolResultEntry)]
    assert outputs == ["a0", "b1"]


async def test_the_holder_saves_freely_and_renewal_keeps_its_token(checkpointer: Any) -> None:
    assert await checkpointer.acquire_lease("r1", "worker-a", 30.0)
    assert await checkpointer.acquire_lease("r1", "worker-a", 30.0)  # extend: same lease
    assert await checkpointer.renew_lease("r1", "worker-a", 30.0)
    for i in range(3):
        await checkpointer.append("r1", [InputEntry(content=str(i))], RunHead("w", turns=i))
    snap = await checkpointer.load("r1")
    assert snap is not None and len(snap.entries) == 3


async def test_a_released_lease_fences_its_old_holder_once_another_takes_it(
    checkpoint_backend: Backend,
) -> None:
    store_a, store_b = checkpoint_backend.open(), checkpoint_backend.open()
    ready, taken = asyncio.Event(), asyncio.Event()

    async def worker_a() -> None:
        assert await store_a.acquire_lease("r1", "worker-a", 30.0)  # type: ignore[attr-defined]
        await store_a.append("r1", [InputEntry(content="a")], RunHead("w"))
        await store_a.release_lease("r1", "worker-a")  # type: ignore[attr-defined]
        ready.set()
        await taken.wait()
        assert not await store_a.renew_lease("r1", "worker-a", 30.0)  # type: ignore[attr-defined]

    async def worker_b() -> None:
        await ready.wait()
        assert await store_b.acquire_lease("r1", "worker-b", 30.0)  # type: ignore[attr-defined]
        taken.set()

    await asyncio.gather(worker_a(), worker_b())
    assert await store_b.lease_holder("r1") == "worker-b"  # type: ignore[attr-defined]


async def test_code_that_took_no_lease_is_not_fenced(checkpointer: Any) -> None:
    """Admin tools and custom loops that never lease a run keep writing as before."""

    async def other_worker() -> None:
        assert await checkpointer.acquire_lease("r1", "worker-a", 30.0)

    await asyncio.ensure_future(other_worker())  # its lease lives in its own task
    await checkpointer.append("r1", [InputEntry(content="x")], RunHead("w"))
    assert (await checkpointer.load("r1")) is not None


# -- a worker whose wall clock jumped ahead -----------------------------------------------------

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, time
    real = time.time
    time.time = lambda: real() + 3600.0  # this process's wall clock is an hour ahead

    async def main(kind, where, prefix):
        if kind == "sqlite":
            from lovia.stores.sqlite import SQLiteCheckpointer
            cp = SQLiteCheckpointer(where, wal=True)
        else:
            from lovia.stores.postgres import PostgresCheckpointer
            cp = PostgresCheckpointer(where, table_prefix=prefix)
        async with cp:
            took = await cp.acquire_lease("r1", "jumped-worker", 30.0)
            print(json.dumps({"took": took, "holder": await cp.lease_holder("r1")}))

    asyncio.run(main(*sys.argv[1:4]))
    """
)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_wall_clock_step_cannot_take_a_live_lease_over(kind: str, tmp_path: Path) -> None:
    backend = Backend(kind, tmp_path, "checkpoint")
    try:
        store: Any = backend.open()
        assert await store.acquire_lease("r1", "live-worker", 30.0)
        where = str(backend.path) if kind == "sqlite" else backend.dsn
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", CHILD, kind, where, backend.prefix],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"took": False, "holder": "live-worker"}
        assert await store.lease_holder("r1") == "live-worker"
    finally:
        await backend.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_worker_that_lost_its_lease_cannot_append_its_run_to_the_session(
    kind: str, tmp_path: Path
) -> None:
    """The session in the same file (or under the same table prefix) checks the lease too."""
    backend = Backend(kind, tmp_path, "checkpoint")
    session: Any
    if kind == "sqlite":
        from lovia.stores import SQLiteSession

        session = SQLiteSession(backend.path)
    else:
        from lovia.stores import PostgresSession

        session = PostgresSession(backend.dsn, table_prefix=backend.prefix)
    store: Any = backend.open()
    try:
        a_has_lease, b_took_over = asyncio.Event(), asyncio.Event()

        async def worker_a() -> None:
            assert await store.acquire_lease("r1", "worker-a", 30.0)
            a_has_lease.set()
            await b_took_over.wait()
            await session.append("s1", [InputEntry(content="from a")], run_id="r1")

        async def worker_b() -> None:
            await a_has_lease.wait()
            backend.clock.advance(31.0)  # A stalls: its lease expires
            assert await store.acquire_lease("r1", "worker-b", 30.0)
            b_took_over.set()

        task_a = asyncio.ensure_future(worker_a())
        await worker_b()
        with pytest.raises(RunTakenOver):
            await task_a
        assert await session.load("s1") == []
        await session.append("s1", [InputEntry(content="from b")], run_id="r1")
        assert await session.load("s1") == [InputEntry(content="from b")]
    finally:
        await session.close()
        await backend.close()


async def test_prune_never_deletes_a_run_a_live_worker_holds(checkpointer: Any) -> None:
    for rid in ("held", "free"):
        await checkpointer.append(rid, [], RunHead("w", status="running"))
    assert await checkpointer.acquire_lease("held", "worker-a", 30.0)
    assert await checkpointer.prune(statuses=["running"]) == 1
    assert await checkpointer.load("held") is not None
    await checkpointer.release_lease("held", "worker-a")
    assert await checkpointer.prune(statuses=["running"]) == 1
    assert await checkpointer.load("held") is None
