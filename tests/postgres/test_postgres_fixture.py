"""A frozen version-1 PostgreSQL database (``tests/fixtures/postgres-v1.sql``) reads whole
and its interrupted run resumes, so later migrations are checked against real old data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InputEntry,
    PostgresCheckpointer,
    PostgresSession,
    Runner,
    SessionConflict,
    ToolCallEntry,
    ToolResultEntry,
    tool,
)
from lovia.testing import ScriptedProvider, text
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "postgres-v1.sql"


@pytest.fixture
def loaded() -> Iterator[tuple[str, str]]:
    """The fixture's tables under a fresh prefix."""
    dsn = postgres_dsn()
    prefix = fresh_prefix()
    script = FIXTURE.read_text().replace("v1fixture_", prefix)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(script.encode())  # one multi-statement script, no parameters
        yield dsn, prefix
    finally:
        drop_prefix(dsn, prefix)


async def test_a_version_1_database_reads_whole(loaded: tuple[str, str]) -> None:
    dsn, prefix = loaded
    async with (
        PostgresSession(dsn, table_prefix=prefix) as session,
        PostgresCheckpointer(dsn, table_prefix=prefix) as cp,
    ):
        segments = await session.segments("user-1")
        assert [s.run_id for s in segments] == ["run-a", "run-b"]
        assert segments[0].meta == {"context_state": {"summary": None}}
        assert len(segments[1].entries) == 4
        snap = await cp.load("run-c")
        assert snap is not None
        assert (snap.status, snap.turns, snap.started_calls) == ("running", 1, ("c2",))
        assert snap.usage.input_tokens == 12
        assert [r.run_id for r in await cp.list_runs(statuses=["running"])] == ["run-c"]


async def test_its_interrupted_run_resumes_and_joins_the_session(loaded: tuple[str, str]) -> None:
    """C10: the dangling refund call runs again, then the run completes into the session."""
    dsn, prefix = loaded
    refunds: list[int] = []

    @tool
    def refund(order: int) -> str:
        """Refund an order."""
        refunds.append(order)
        return f"order {order} refunded"

    agent = Agent("support", model=ScriptedProvider([text("Refunded.")]), tools=[refund])
    async with (
        PostgresSession(dsn, table_prefix=prefix) as session,
        PostgresCheckpointer(dsn, table_prefix=prefix) as cp,
    ):
        result = await Runner.run(
            agent,
            [],
            session=session,
            session_id="user-1",
            checkpoint=CheckpointOptions(cp, "run-c", if_run_exists="resume_only"),
        )
        assert result.output == "Refunded."
        assert refunds == [7]
        assert [s.run_id for s in await session.segments("user-1")] == ["run-a", "run-b", "run-c"]
        entries = (await session.segments("user-1"))[2].entries
        assert isinstance(entries[1], ToolCallEntry) and isinstance(entries[2], ToolResultEntry)


async def test_a_version_1_database_migrates_to_session_versions(loaded: tuple[str, str]) -> None:
    """Schema 2 adds one version row per session, in one transaction, starting at the
    session's segment count; the version then guards appends (issue 9)."""
    dsn, prefix = loaded
    async with PostgresSession(dsn, table_prefix=prefix) as session:
        history = await session.history("user-1")
        assert [s.run_id for s in history.segments] == ["run-a", "run-b"]
        assert history.version == 2
        with pytest.raises(SessionConflict):
            await session.append("user-1", [user("stale")], run_id="run-x", expected_version=1)
        await session.append("user-1", [user("fresh")], run_id="run-x", expected_version=2)
        assert (await session.history("user-1")).version == 3
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            f"SELECT value FROM \"{prefix}meta\" WHERE key = 'schema:session'"
        ).fetchone()
    assert row == ("2",)
