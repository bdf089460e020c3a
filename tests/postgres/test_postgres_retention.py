"""``PostgresCheckpointer.prune`` forgets finished runs like the other built-in
checkpointers; sessions are untouched (issue 9 parity on PostgreSQL; C5, C9)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from lovia import InputEntry, PostgresCheckpointer, PostgresSession, RunHead, UserError
from tests.stores.pg import drop_prefix, fresh_prefix, postgres_dsn

DAY = 86_400.0


@pytest.fixture
def db() -> Iterator[tuple[str, str]]:
    dsn = postgres_dsn()
    prefix = fresh_prefix()
    yield dsn, prefix
    drop_prefix(dsn, prefix)


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


async def test_prune_deletes_old_finished_runs_only(db: tuple[str, str]) -> None:
    dsn, prefix = db
    now = time.time()
    async with (
        PostgresCheckpointer(dsn, table_prefix=prefix) as cp,
        PostgresSession(dsn, table_prefix=prefix) as session,
    ):
        await session.append("s", [user("kept")], run_id="old-done")
        for rid, status, age in [
            ("old-done", "completed", 10 * DAY),
            ("old-failed", "failed", 10 * DAY),
            ("old-running", "running", 10 * DAY),
            ("new-done", "completed", 0.0),
        ]:
            head = RunHead(agent_name="a", status=status, updated_at=now - age)  # type: ignore[arg-type]
            await cp.append(rid, [user(rid)], head)
        assert await cp.prune(older_than=7 * DAY) == 2
        left = sorted(r.run_id for r in await cp.list_runs())
        assert left == ["new-done", "old-running"]
        assert await cp.prune(older_than=7 * DAY) == 0
        assert await cp.prune(statuses=["running"]) == 1
        assert await cp.prune(statuses=[]) == 0
        assert [s.run_id for s in await session.segments("s")] == ["old-done"]
        await cp.append("old-done", [user("again")], RunHead(agent_name="a"))
        snap = await cp.load("old-done")
        assert snap is not None and snap.entries == [user("again")]  # a fresh run


@pytest.mark.parametrize("kwargs", [{"older_than": -1}, {"statuses": "completed"}])
async def test_prune_with_bad_arguments_is_a_user_error(
    db: tuple[str, str], kwargs: dict[str, object]
) -> None:
    dsn, prefix = db
    async with PostgresCheckpointer(dsn, table_prefix=prefix) as cp:
        with pytest.raises(UserError):
            await cp.prune(**kwargs)  # type: ignore[arg-type]
