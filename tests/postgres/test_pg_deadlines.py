"""PostgreSQL stalls end (issue 27, part 3): with another session holding ``LOCK TABLE`` on
the checkpoint table, a save fails after ``lock_timeout`` with an error that names it and
what to tune, instead of waiting as long as the lock is held; the save did not commit, and
the next one lands."""

from __future__ import annotations

import asyncio
import uuid
from urllib.parse import quote

import psycopg
import pytest

from lovia import PostgresCheckpointer, StoreError
from lovia.stores.checkpoint import RunHead
from lovia.stores.postgres import PgDeadlines
from lovia.transcript import InputEntry

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn


async def test_a_save_behind_a_table_lock_fails_after_lock_timeout_and_did_not_commit() -> None:
    dsn = postgres_dsn()
    prefix = fresh_prefix()
    cp = PostgresCheckpointer(dsn, table_prefix=prefix, deadlines=PgDeadlines(lock_timeout=1))
    try:
        await cp.append("r1", [InputEntry(role="user", content="one")], RunHead("a"))
        holder = await psycopg.AsyncConnection.connect(dsn)
        try:
            await holder.execute(f"LOCK TABLE {prefix}checkpoint_runs IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(StoreError) as failed:
                # bounded by lock_timeout; the 60 s guard only keeps a broken build from hanging
                await asyncio.wait_for(
                    cp.append("r1", [InputEntry(role="user", content="two")], RunHead("a")), 60
                )
            assert "lock_timeout" in failed.value.message and "nothing" in failed.value.message
            assert failed.value.hint and "lock_timeout" in failed.value.hint
        finally:
            await holder.rollback()
            await holder.close()
        snap = await cp.load("r1")
        assert snap is not None and [e.content for e in snap.entries] == ["one"]
        await cp.append("r1", [InputEntry(role="user", content="two")], RunHead("a"))
        snap = await cp.load("r1")
        assert snap is not None and [e.content for e in snap.entries] == ["one", "two"]
    finally:
        await cp.close()
        drop_prefix(dsn, prefix)


async def test_what_the_dsn_sets_wins_over_the_default_deadlines() -> None:
    """A DSN's own ``options`` (a ``search_path``) and parameters survive the deadlines the
    store adds: its tables land in that schema, and its own statement_timeout is the one used."""
    base = postgres_dsn()
    schema = f"dl{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in base else "?"
    opts = quote(f"-csearch_path={schema} -cstatement_timeout=4321")
    dsn = f"{base}{sep}options={opts}&connect_timeout=7"
    kwargs = PgDeadlines().connect_kwargs(dsn)
    assert "connect_timeout" not in kwargs  # the DSN's 7 is left to stand
    cp = PostgresCheckpointer(dsn)
    try:
        await cp.append("r1", [InputEntry(role="user", content="one")], RunHead("a"))
        with psycopg.connect(base, autocommit=True) as admin:
            found = admin.execute(
                "SELECT table_schema FROM information_schema.tables"
                " WHERE table_name = 'lovia_checkpoint_runs' AND table_schema = %s",
                (schema,),
            ).fetchall()
        assert found == [(schema,)]
        async with await psycopg.AsyncConnection.connect(dsn, **kwargs) as conn:
            shown = await (await conn.execute("SHOW statement_timeout")).fetchone()
        assert shown is not None and shown[0] in ("4321ms", "4321")
    finally:
        await cp.close()
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
