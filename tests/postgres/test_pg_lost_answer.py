"""A save that committed but whose answer was lost is not appended again by the same run
(issue 27, part 3: the stored entry count is read before the next write). Through the
loopback proxy: on the connections open while the tool runs, the server's answer to the next
COMMIT and all after it are dropped; new connections pass."""

from __future__ import annotations

import asyncio

import pytest

from lovia import Agent, CheckpointOptions, PostgresCheckpointer, Runner, StoreError, tool
from lovia.testing import ScriptedProvider, call, text

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from .pg_proxy import PgProxy
from .test_pg_stalls import GUARD_S, SHORT


async def test_the_runs_own_failed_save_does_not_append_a_save_that_landed_unanswered() -> None:
    """The save of the tool's call and result commits; its answer never comes, so it fails
    after ``call_timeout`` and the run fails. The run's own ``failed`` save goes out on a new
    connection: it must find the entries stored already and append nothing twice."""
    dsn, prefix = postgres_dsn(), fresh_prefix()

    try:
        async with PgProxy(dsn) as proxy:

            @tool
            def look_up(order: int) -> str:
                """Look an order up (and lose the next commit's answer on the open links)."""
                proxy.mute_after_commit()
                return f"order {order} shipped"

            script = [call("look_up", {"order": 7}), text("Shipped.")]
            agent = Agent("support", model=ScriptedProvider(script), tools=[look_up])
            async with PostgresCheckpointer(proxy.dsn, table_prefix=prefix, deadlines=SHORT) as cp:
                run = Runner.run(agent, "where is 7?", checkpoint=CheckpointOptions(cp, "r1"))
                with pytest.raises(StoreError) as failed:
                    await asyncio.wait_for(run, GUARD_S)
                assert "may or may not have committed" in failed.value.message
        async with PostgresCheckpointer(dsn, table_prefix=prefix) as direct:
            snap = await direct.load("r1")
        assert snap is not None and snap.status == "failed"
        kinds = [type(e).__name__ for e in snap.entries]
        assert kinds == ["InputEntry", "ToolCallEntry", "ToolResultEntry"], kinds
    finally:
        drop_prefix(dsn, prefix)
