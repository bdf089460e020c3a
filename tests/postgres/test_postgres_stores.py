"""PostgreSQL extras beyond the shared contract suites: schema versioning, table prefixes,
shared pools, concurrent writers (S5, S8, S10, C2) and clear errors."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from lovia import (
    InputEntry,
    PostgresCheckpointer,
    PostgresSession,
    RunHead,
    SchemaError,
    StoreError,
    ToolCallEntry,
    ToolResultEntry,
    UserError,
)
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


@pytest.fixture
def dsn() -> str:
    return postgres_dsn()


@pytest.fixture
def prefix(dsn: str) -> Iterator[str]:
    name = fresh_prefix()
    yield name
    drop_prefix(dsn, name)


def meta(dsn: str, prefix: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(f'SELECT key, value FROM "{prefix}meta"').fetchall()
    return dict(rows)


async def test_stores_record_their_schema_versions(dsn: str, prefix: str) -> None:
    async with PostgresSession(dsn, table_prefix=prefix) as s:
        await s.append("s", [user("x")])
    async with PostgresCheckpointer(dsn, table_prefix=prefix) as cp:
        await cp.append("r", [user("x")], RunHead(agent_name="a"))
    assert meta(dsn, prefix) == {"schema:session": "2", "schema:checkpoint": "3"}


async def test_a_newer_schema_is_refused_and_left_unchanged(dsn: str, prefix: str) -> None:
    async with PostgresSession(dsn, table_prefix=prefix) as s:
        await s.append("s", [user("kept")], run_id="r1")
    with psycopg.connect(dsn) as conn:
        conn.execute(f"UPDATE \"{prefix}meta\" SET value = '7' WHERE key = 'schema:session'")
    async with PostgresSession(dsn, table_prefix=prefix) as s:
        with pytest.raises(SchemaError) as info:
            await s.load("s")
        assert info.value.hint
    assert meta(dsn, prefix)["schema:session"] == "7"
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(f'SELECT run_id FROM "{prefix}session_segments"').fetchall()
    assert rows == [("r1",)]


@pytest.mark.parametrize("bad", ["", "Lovia", "x; DROP TABLE y", "1abc", "a-b", "x" * 41, 7])
def test_a_bad_table_prefix_is_a_user_error(dsn: str, bad: Any) -> None:
    with pytest.raises(UserError) as info:
        PostgresSession(dsn, table_prefix=bad)
    assert info.value.hint
    with pytest.raises(UserError):
        PostgresCheckpointer(dsn, table_prefix=bad)


def test_something_that_is_not_a_dsn_or_pool_is_a_user_error() -> None:
    with pytest.raises(UserError):
        PostgresSession(42)  # type: ignore[arg-type]


async def test_two_prefixes_in_one_database_never_see_each_other(dsn: str, prefix: str) -> None:
    other = fresh_prefix()
    try:
        async with (
            PostgresSession(dsn, table_prefix=prefix) as a,
            PostgresSession(dsn, table_prefix=other) as b,
        ):
            await a.append("s", [user("in a")])
            assert await b.load("s") == []
    finally:
        drop_prefix(dsn, other)


async def test_stores_share_a_pool_the_caller_owns(dsn: str, prefix: str) -> None:
    async with AsyncConnectionPool(
        dsn, min_size=1, max_size=2, kwargs={"autocommit": True}, open=False
    ) as pool:
        session = PostgresSession(pool, table_prefix=prefix)
        cp = PostgresCheckpointer(pool, table_prefix=prefix)
        await session.append("s", [user("hi")], run_id="r1")
        await cp.append("r1", [user("hi")], RunHead(agent_name="a"))
        await session.close()
        await cp.close()
        assert not pool.closed  # the stores leave a pool they were given open
        assert await PostgresSession(pool, table_prefix=prefix).load("s") == [user("hi")]


async def test_an_unreachable_server_is_a_store_error_with_a_hint() -> None:
    async with PostgresSession("postgresql://nobody@127.0.0.1:1/none?connect_timeout=1") as s:
        with pytest.raises(StoreError) as info:
            await s.load("s")
    assert info.value.hint and "DSN" in info.value.hint


async def test_concurrent_appends_of_one_run_store_one_segment(dsn: str, prefix: str) -> None:
    """S5: the unique key, not a read-then-write, keeps racing appends of one run single."""
    stores = [PostgresSession(dsn, table_prefix=prefix) for _ in range(4)]
    try:
        ids = await asyncio.gather(
            *(s.append("s", [user(f"from {i}")], run_id="same") for i, s in enumerate(stores))
        )
        assert ids == ["same"] * 4
        segments = await stores[0].segments("s")
        assert len(segments) == 1
    finally:
        for s in stores:
            await s.close()


async def test_trim_racing_rewind_never_writes_an_undone_tail_back(dsn: str, prefix: str) -> None:
    """S8/S10: maintenance serializes per session; a trim planned before a rewind cannot
    write the rewound run's old entries back."""
    async with (
        PostgresSession(dsn, table_prefix=prefix) as writer,
        PostgresSession(dsn, table_prefix=prefix) as trimmer,
        PostgresSession(dsn, table_prefix=prefix) as rewinder,
    ):
        for n in range(6):
            await writer.append(
                "s",
                [
                    user(f"q{n}"),
                    ToolCallEntry(call_id=f"c{n}", name="t", arguments="{}"),
                    ToolResultEntry(call_id=f"c{n}", output="o" * 500),
                ],
                run_id=f"r{n}",
            )

        async def trims() -> None:
            for _ in range(15):
                await trimmer.trim_tool_results("s", keep_chars=10, keep_runs=0)

        async def rewinds() -> None:
            for keep in range(16, 3, -1):
                await rewinder.rewind("s", keep_entries=keep)

        await asyncio.gather(trims(), rewinds())
        loaded = await writer.load("s")
        assert len(loaded) == 4  # r0 whole + r1's input: a stale trim would bring more back
        assert [seg.run_id for seg in await writer.segments("s")] == ["r0", "r1"]


async def test_concurrent_saves_of_one_run_keep_every_batch(dsn: str, prefix: str) -> None:
    """C2: saves from several connections are atomic; none is lost or interleaved."""
    stores = [PostgresCheckpointer(dsn, table_prefix=prefix) for _ in range(3)]
    try:

        async def save(i: int, cp: PostgresCheckpointer) -> None:
            for j in range(10):
                await cp.append("r", [user(f"{i}-{j}")], RunHead(agent_name="a", turns=j))

        await asyncio.gather(*(save(i, cp) for i, cp in enumerate(stores)))
        snap = await stores[0].load("r")
        assert snap is not None
        texts = sorted(e.text for e in snap.entries if isinstance(e, InputEntry))
        assert texts == sorted(f"{i}-{j}" for i in range(3) for j in range(10))
    finally:
        for cp in stores:
            await cp.close()


FORGOTTEN = """
import asyncio, sys
from lovia.stores import PostgresSession

async def main():
    session = PostgresSession(sys.argv[1], table_prefix=sys.argv[2])
    print(len(await session.load("x")))

asyncio.run(main())
print("returned")
"""


def test_a_store_never_closed_does_not_keep_the_program_alive() -> None:
    """Issue 14, finding 14: a forgotten close() must not hang asyncio.run()."""
    import subprocess
    import sys
    from pathlib import Path

    dsn, prefix = postgres_dsn(), fresh_prefix()
    root = Path(__file__).resolve().parents[2]
    try:
        for _ in range(5):
            try:
                done = subprocess.run(
                    [sys.executable, "-c", FORGOTTEN, dsn, prefix],
                    capture_output=True,
                    text=True,
                    timeout=20,
                    cwd=root,
                )
            except subprocess.TimeoutExpired:
                pytest.fail("asyncio.run() did not return: the unclosed store kept it waiting")
            assert done.returncode == 0, done.stderr
            assert done.stdout.splitlines()[-1] == "returned"
    finally:
        drop_prefix(dsn, prefix)
