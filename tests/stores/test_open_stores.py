"""``lovia.stores.open_stores``: one ``--db`` value opens both stores (issue 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia import InputEntry, RunHead, SQLiteCheckpointer, SQLiteSession, UserError
from lovia.stores import open_stores

from .pg import drop_prefix, fresh_prefix, postgres_dsn


async def _round_trip(session: Any, cp: Any) -> None:
    try:
        await session.append("s", [InputEntry(role="user", content="hi")], run_id="r1")
        await cp.append("r1", [InputEntry(role="user", content="hi")], RunHead(agent_name="a"))
        assert [s.run_id for s in await session.segments("s")] == ["r1"]
        snap = await cp.load("r1")
        assert snap is not None and snap.agent_name == "a"
    finally:
        await session.close()
        await cp.close()


async def test_a_path_opens_sqlite_stores_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "app.db"
    session, cp = open_stores(str(path))
    assert isinstance(session, SQLiteSession) and isinstance(cp, SQLiteCheckpointer)
    await _round_trip(session, cp)
    assert path.exists()


async def test_a_missing_file_without_create_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError) as info:
        open_stores(str(tmp_path / "none.db"), create=False)
    assert info.value.hint
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize("bad", ["", "   ", None])
def test_an_empty_db_is_a_user_error(bad: Any) -> None:
    with pytest.raises(UserError):
        open_stores(bad)


@pytest.mark.parametrize("scheme", ["postgresql://", "postgres://"])
async def test_a_postgresql_url_opens_postgres_stores_on_one_pool(scheme: str) -> None:
    from lovia import PostgresCheckpointer, PostgresSession

    dsn = postgres_dsn()
    prefix = fresh_prefix()
    try:
        session, cp = open_stores(scheme + dsn.split("://", 1)[1], table_prefix=prefix)
        assert isinstance(session, PostgresSession) and isinstance(cp, PostgresCheckpointer)
        await _round_trip(session, cp)
    finally:
        drop_prefix(dsn, prefix)
