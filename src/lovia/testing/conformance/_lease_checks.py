"""The checkpointer's optional capability: leases on run ids, and fencing."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ...stores.checkpoint import RunHead
from ...stores.lease import LeaseStore, RunTakenOver
from ...transcript import InputEntry
from ._kit import Check, Kit

__all__ = ["LEASE_CHECKS"]

T = TypeVar("T")


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def head(**overrides: Any) -> RunHead:
    return RunHead(**{"agent_name": "worker", **overrides})


# -- leases and fencing (a capability) -------------------------------------------------------


async def leases(kit: Kit) -> None:
    kit.require_capability(LeaseStore)
    cp = kit.store
    kit.expect(await cp.acquire_lease("r", "a", 30.0), "leases: a free run id can be leased")
    kit.expect(
        not await cp.acquire_lease("r", "b", 30.0),
        "leases: a run id another owner holds cannot be leased",
    )
    kit.expect(await cp.lease_holder("r") == "a", "leases: lease_holder names the holder")
    kit.expect(await cp.renew_lease("r", "a", 30.0), "leases: the holder renews its lease")
    kit.expect(not await cp.renew_lease("r", "b", 30.0), "leases: only the holder renews")
    await cp.release_lease("r", "b")
    kit.expect(await cp.lease_holder("r") == "a", "leases: only the holder releases")
    await cp.release_lease("r", "a")
    kit.expect(await cp.lease_holder("r") is None, "leases: a released lease is free")
    kit.expect(await cp.acquire_lease("r", "b", 30.0), "leases: a released run id can be leased")
    kit.expect(await cp.acquire_lease("e", "a", 0.2), "leases: a free run id can be leased")
    await asyncio.sleep(0.6)
    kit.expect(
        await cp.lease_holder("e") is None and await cp.acquire_lease("e", "b", 30.0),
        "leases: an expired lease can be taken over",
    )
    kit.expect(
        not await cp.renew_lease("e", "a", 30.0),
        "leases: a lease taken over cannot be renewed by its old holder",
    )


class _Worker:
    """One worker of the fencing check: a task of its own (so leases it takes are held in
    its own context) that runs what it is given, one at a time."""

    def __init__(self) -> None:
        self._jobs: asyncio.Queue[tuple[Callable[[], Awaitable[Any]], asyncio.Future[Any]]]
        self._jobs = asyncio.Queue()
        self._task = asyncio.ensure_future(self._loop())

    async def _loop(self) -> None:
        while True:
            fn, done = await self._jobs.get()
            try:
                done.set_result(await fn())
            except Exception as exc:
                done.set_exception(exc)

    async def do(self, fn: Callable[[], Awaitable[T]]) -> T:
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        await self._jobs.put((fn, done))
        return await done

    async def stop(self) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


async def fencing(kit: Kit) -> None:
    """A worker whose lease was taken over cannot save (RunTakenOver) and writes nothing."""
    kit.require_capability(LeaseStore)
    cp = kit.store
    a, b = _Worker(), _Worker()
    try:
        kit.expect(await a.do(lambda: cp.acquire_lease("f", "a", 0.2)), "leases: can be leased")
        await a.do(lambda: cp.append("f", [user("by a")], head()))
        await asyncio.sleep(0.6)
        kit.expect(
            await b.do(lambda: cp.acquire_lease("f", "b", 30.0)),
            "leases: an expired lease can be taken over",
        )
        await b.do(lambda: cp.append("f", [user("by b")], head(turns=1)))
        try:
            await a.do(lambda: cp.append("f", [user("late a")], head(turns=9)))
            refused = False
        except RunTakenOver:
            refused = True
    finally:
        await a.stop()
        await b.stop()
    snap = await cp.load("f")
    kit.expect(refused, "fencing: a worker whose lease was taken over could still save")
    kit.expect(
        snap.entries == [user("by a"), user("by b")] and snap.turns == 1,
        "fencing: a refused save wrote something",
        got=(snap.entries, snap.turns),
    )


LEASE_CHECKS: tuple[Check, ...] = tuple(
    Check(fn.__name__, fn, (fn.__doc__ or "").strip()) for fn in (leases, fencing)
)
