"""The run-lease contract, run against every checkpointer backend in ``BACKENDS``.

A lease on a run id has one owner at a time and an expiry; an expired lease is taken over
(so a crashed worker's run is resumed by the next one). Issue 8.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, Runner, UserError
from lovia.stores.lease import LeaseStore
from lovia.stores.run_lease import holder_is_dead
from lovia.testing import ScriptedProvider, text
from tests.stores.backends import Backend, checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name


async def test_built_in_checkpointers_support_leases(checkpointer: Any) -> None:
    assert isinstance(checkpointer, LeaseStore)


async def test_a_free_run_is_acquired_and_then_busy_for_others(checkpointer: Any) -> None:
    assert await checkpointer.acquire_lease("r1", "worker-a", 30.0) is True
    assert await checkpointer.acquire_lease("r1", "worker-b", 30.0) is False
    assert await checkpointer.acquire_lease("r2", "worker-b", 30.0) is True  # per run id


async def test_the_holder_may_acquire_again(checkpointer: Any) -> None:
    assert await checkpointer.acquire_lease("r1", "worker-a", 30.0)
    assert await checkpointer.acquire_lease("r1", "worker-a", 30.0)


async def test_renew_succeeds_only_for_the_holder(checkpointer: Any) -> None:
    await checkpointer.acquire_lease("r1", "worker-a", 30.0)
    assert await checkpointer.renew_lease("r1", "worker-a", 30.0) is True
    assert await checkpointer.renew_lease("r1", "worker-b", 30.0) is False
    assert await checkpointer.renew_lease("unleased", "worker-a", 30.0) is False


async def test_release_frees_the_run_only_for_its_owner(checkpointer: Any) -> None:
    await checkpointer.acquire_lease("r1", "worker-a", 30.0)
    await checkpointer.release_lease("r1", "worker-b")  # not the owner: no effect
    assert await checkpointer.acquire_lease("r1", "worker-b", 30.0) is False
    await checkpointer.release_lease("r1", "worker-a")
    assert await checkpointer.acquire_lease("r1", "worker-b", 30.0) is True
    await checkpointer.release_lease("never-leased", "worker-a")  # fine


async def test_an_expired_lease_is_taken_over_and_the_old_holder_cannot_renew(
    checkpoint_backend: Backend,
) -> None:
    """A holder that stopped renewing (it died) loses the run to the next worker."""
    checkpointer: Any = checkpoint_backend.open()
    assert await checkpointer.acquire_lease("r1", "dead-worker", 30.0)
    checkpoint_backend.clock.advance(29.0)
    assert await checkpointer.acquire_lease("r1", "next-worker", 30.0) is False  # not yet
    checkpoint_backend.clock.advance(2.0)  # the lease ran out: no heartbeat renewed it
    assert await checkpointer.acquire_lease("r1", "next-worker", 30.0) is True
    assert await checkpointer.renew_lease("r1", "dead-worker", 30.0) is False
    assert await checkpointer.acquire_lease("r1", "dead-worker", 30.0) is False


async def test_lease_holder_names_the_live_owner_only(checkpoint_backend: Backend) -> None:
    checkpointer: Any = checkpoint_backend.open()
    assert await checkpointer.lease_holder("r1") is None
    await checkpointer.acquire_lease("r1", "worker-a", 3600.0)
    assert await checkpointer.lease_holder("r1") == "worker-a"
    await checkpointer.acquire_lease("r2", "worker-b", 30.0)
    checkpoint_backend.clock.advance(31.0)
    assert await checkpointer.lease_holder("r2") is None  # expired: nobody holds it
    assert await checkpointer.lease_holder("r1") == "worker-a"
    await checkpointer.release_lease("r1", "worker-a")
    assert await checkpointer.lease_holder("r1") is None


async def test_a_lease_held_by_a_dead_local_process_is_taken_over_at_once(
    checkpointer: Any,
) -> None:
    """A crashed worker re-submitted on the same host need not wait out the ttl."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import os; print(os.getpid())", stdout=asyncio.subprocess.PIPE
    )
    out, _ = await child.communicate()
    dead_owner = f"{socket.gethostname()}/{int(out)}/deadbeef"
    assert holder_is_dead(dead_owner)
    assert not holder_is_dead(f"other-host/{int(out)}/x")  # only the ttl can tell
    assert await checkpointer.acquire_lease("job", dead_owner, 3600.0)

    agent = Agent("a", model=ScriptedProvider([text("done")]))
    options = CheckpointOptions(checkpointer, "job", on_busy="fail")
    assert (await Runner.run(agent, "go", checkpoint=options)).output == "done"
    assert await checkpointer.lease_holder("job") is None  # released at the end


async def test_a_renewed_lease_outlives_its_first_ttl(checkpoint_backend: Backend) -> None:
    checkpointer: Any = checkpoint_backend.open()
    assert await checkpointer.acquire_lease("r1", "worker-a", 30.0)
    for _ in range(3):
        checkpoint_backend.clock.advance(20.0)
        assert await checkpointer.renew_lease("r1", "worker-a", 30.0)
    # 60 s after the first ttl ran out, the renewals keep it
    assert await checkpointer.acquire_lease("r1", "worker-b", 30.0) is False
    checkpoint_backend.clock.advance(31.0)
    assert await checkpointer.acquire_lease("r1", "worker-b", 30.0) is True


async def test_leases_do_not_touch_the_stored_run(checkpointer: Any) -> None:
    from lovia import InputEntry, RunHead

    await checkpointer.append("r1", [InputEntry(role="user", content="x")], RunHead("a"))
    await checkpointer.acquire_lease("r1", "worker-a", 30.0)
    await checkpointer.delete("r1")
    assert await checkpointer.load("r1") is None
    assert await checkpointer.acquire_lease("r1", "worker-b", 30.0) is False


async def test_a_durable_backend_shares_leases_across_instances(
    checkpoint_backend: Backend,
) -> None:
    """Two processes (here: two instances on one storage) see one lease table."""
    if not checkpoint_backend.durable:
        pytest.skip("in-memory leases live in one process")
    first: Any = checkpoint_backend.open()
    second: Any = checkpoint_backend.open()
    assert await first.acquire_lease("r1", "worker-a", 30.0)
    assert await second.acquire_lease("r1", "worker-b", 30.0) is False


async def test_many_contenders_get_one_lease(checkpoint_backend: Backend) -> None:
    stores: list[Any] = [checkpoint_backend.open() for _ in range(4)]
    results = await asyncio.gather(
        *(s.acquire_lease("hot", f"worker-{i}", 30.0) for i, s in enumerate(stores * 2))
    )
    assert sum(results) == 1


@pytest.mark.parametrize(
    "args", [("", "w", 1.0), ("r", "", 1.0), ("r", "w", 0), ("r", "w", -1.0), ("r", "w", True)]
)
async def test_bad_lease_arguments_are_user_errors(checkpointer: Any, args: Any) -> None:
    with pytest.raises(UserError):
        await checkpointer.acquire_lease(*args)


# -- SQLite extras -----------------------------------------------------------------------


async def test_sqlite_leases_are_a_versioned_component_and_a_newer_one_is_refused(
    tmp_path: Any,
) -> None:
    """The lease table gets its own schema row; a newer lease schema is left untouched."""
    import sqlite3

    from lovia import SchemaError, SQLiteCheckpointer

    path = tmp_path / "cp.db"
    async with SQLiteCheckpointer(path) as cp:
        assert await cp.acquire_lease("r1", "worker-a", 30.0)
    with sqlite3.connect(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM lovia_meta").fetchall())
        assert meta["schema:lease"] == "2"
        conn.execute("UPDATE lovia_meta SET value = '5' WHERE key = 'schema:lease'")
    before = path.read_bytes()
    async with SQLiteCheckpointer(path) as cp:
        with pytest.raises(SchemaError) as info:
            await cp.acquire_lease("r2", "worker-a", 30.0)
        assert info.value.hint
    assert path.read_bytes() == before
