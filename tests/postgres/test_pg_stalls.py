"""PostgreSQL stalls end (issue 27, part 3), through a loopback proxy that breaks the link:
a store call on a link that stops forwarding fails after ``call_timeout`` naming what to tune;
a run cut off by ``asyncio.wait_for`` returns; a save whose answer was lost (committed or
not) is found out by the next submission, so the run's entries appear once, never twice."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, PostgresCheckpointer, Runner, StoreError, tool
from lovia.stores.checkpoint import RunHead
from lovia.stores.postgres import PgDeadlines
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn
from .pg_proxy import Mode, PgProxy

# small deadlines so a stall ends in seconds; the guards below only keep a broken build
# from hanging CI, they time nothing
SHORT = PgDeadlines(
    statement_timeout=2, lock_timeout=1, connect_timeout=2, tcp_user_timeout=2, call_timeout=3
)
GUARD_S = 120


def _contents(snap: Any) -> list[Any]:
    return [getattr(e, "content", None) or type(e).__name__ for e in snap.entries]


async def test_a_store_call_on_a_stalled_link_fails_naming_call_timeout() -> None:
    dsn, prefix = postgres_dsn(), fresh_prefix()
    try:
        async with PgProxy(dsn) as proxy:
            cp = PostgresCheckpointer(proxy.dsn, table_prefix=prefix, deadlines=SHORT)
            async with cp:
                await cp.append("r1", [InputEntry(role="user", content="one")], RunHead("a"))
                proxy.mode = "stall"
                with pytest.raises(StoreError) as failed:
                    await asyncio.wait_for(
                        cp.append("r1", [InputEntry(role="user", content="two")], RunHead("a")),
                        GUARD_S,
                    )
                assert "call_timeout" in failed.value.message
                assert "may or may not have committed" in failed.value.message
                assert failed.value.hint and "call_timeout" in failed.value.hint
                for _ in range(3):  # reads on the stalled link end the same way
                    with pytest.raises(StoreError):
                        await asyncio.wait_for(cp.load("r1"), GUARD_S)
                # by now the pool's reconnects back off for 4-8 s; the healed link must not
                # wait that out: the store renews its pool after a lost link
                proxy.mode = "pass"
                snap = await asyncio.wait_for(cp.load("r1"), GUARD_S)
                # the stalled bytes never reached the server: the save did not commit
                assert snap is not None and _contents(snap) == ["one"]
    finally:
        drop_prefix(dsn, prefix)


async def test_a_write_whose_answer_is_lost_says_so_and_the_next_load_shows_it_landed() -> None:
    """mute: the statement reaches the server and commits, its answer never arrives."""
    dsn, prefix = postgres_dsn(), fresh_prefix()
    try:
        async with PgProxy(dsn) as proxy:
            cp = PostgresCheckpointer(proxy.dsn, table_prefix=prefix, deadlines=SHORT)
            async with cp:
                await cp.append("r1", [InputEntry(role="user", content="one")], RunHead("a"))
                proxy.mute_open()
                with pytest.raises(StoreError) as failed:
                    await asyncio.wait_for(
                        cp.append("r1", [InputEntry(role="user", content="two")], RunHead("a")),
                        GUARD_S,
                    )
                assert "may or may not have committed" in failed.value.message
                snap = await asyncio.wait_for(cp.load("r1"), GUARD_S)  # a new connection
                assert snap is not None and _contents(snap) == ["one", "two"]
    finally:
        drop_prefix(dsn, prefix)


@pytest.mark.parametrize("mode", ["drop", "reset"])
async def test_a_dropped_or_reset_link_fails_the_call_and_the_next_one_lands(mode: Mode) -> None:
    dsn, prefix = postgres_dsn(), fresh_prefix()
    try:
        async with PgProxy(dsn) as proxy:
            cp = PostgresCheckpointer(proxy.dsn, table_prefix=prefix, deadlines=SHORT)
            async with cp:
                await cp.append("r1", [InputEntry(role="user", content="one")], RunHead("a"))
                proxy.mode = mode
                with pytest.raises(StoreError) as failed:
                    await asyncio.wait_for(
                        cp.append("r1", [InputEntry(role="user", content="two")], RunHead("a")),
                        GUARD_S,
                    )
                assert failed.value.hint
                proxy.mode = "pass"
                await cp.append("r1", [InputEntry(role="user", content="three")], RunHead("a"))
                snap = await cp.load("r1")
                assert snap is not None and _contents(snap) == ["one", "three"]
    finally:
        drop_prefix(dsn, prefix)


def _agent(proxy: PgProxy, mode: Mode) -> Agent:
    @tool
    def look_up(order: int) -> str:
        """Look an order up (and break the link to the checkpoint store)."""
        proxy.mode = mode
        return f"order {order} shipped"

    script = [call("look_up", {"order": 7}), text("Shipped.")]
    return Agent("support", model=ScriptedProvider(script), tools=[look_up])


async def _resume_and_count(dsn: str, prefix: str, run_id: str) -> list[Any]:
    """The next submission of the run, on a healthy link: what the checkpoint then holds."""
    agent = Agent("support", model=ScriptedProvider([text("Shipped.")]))
    async with PostgresCheckpointer(dsn, table_prefix=prefix) as cp:
        result = await Runner.run(agent, "where is 7?", checkpoint=CheckpointOptions(cp, run_id))
        assert result.output == "Shipped."
        snap = await cp.load(run_id)
        assert snap is not None and snap.status == "completed"
        return [type(e).__name__ for e in snap.entries]


@pytest.mark.parametrize("mode", ["stall", "mute"])
async def test_a_run_on_a_broken_link_returns_and_its_next_submission_writes_once(
    mode: Mode,
) -> None:
    """stall: the save never reaches the server; mute: it commits and its answer is lost.
    Either way wait_for(Runner.run(...), 5) returns, and resuming the run finds out which:
    the tool's call and result are stored once."""
    dsn, prefix = postgres_dsn(), fresh_prefix()
    try:
        async with PgProxy(dsn) as proxy:
            async with PostgresCheckpointer(proxy.dsn, table_prefix=prefix, deadlines=SHORT) as cp:
                run = Runner.run(
                    _agent(proxy, mode), "where is 7?", checkpoint=CheckpointOptions(cp, "r1")
                )
                with pytest.raises((asyncio.TimeoutError, StoreError)):
                    await asyncio.wait_for(asyncio.wait_for(run, 5), GUARD_S)
                proxy.mode = "pass"
        kinds = await _resume_and_count(dsn, prefix, "r1")
        assert kinds.count("ToolCallEntry") == 1 and kinds.count("ToolResultEntry") == 1
        assert kinds.count("InputEntry") == 1
    finally:
        drop_prefix(dsn, prefix)
