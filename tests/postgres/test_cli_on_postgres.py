"""``lovia ... --db postgresql://...`` uses the PostgreSQL stores (issue 8)."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from asyncio.subprocess import PIPE
from pathlib import Path

from lovia import InputEntry
from lovia.stores import open_stores
from tests.stores.pg import postgres_dsn

LOVIA = str(Path(sys.executable).with_name("lovia"))


async def test_sessions_list_reads_a_postgres_database() -> None:
    dsn = postgres_dsn()
    session, checkpointer = open_stores(dsn)
    sid = f"cli-{uuid.uuid4().hex}"
    try:
        await session.append(sid, [InputEntry(content="hello from postgres")], run_id="r1")
        child = await asyncio.create_subprocess_exec(
            LOVIA, "sessions", "list", "--db", dsn, "--json", stdout=PIPE, stderr=PIPE
        )
        out, err = await asyncio.wait_for(child.communicate(), 60)
        assert child.returncode == 0, err.decode()
        listed = json.loads(out)
        assert sid in json.dumps(listed)
    finally:
        await session.clear(sid)
        await session.close()
        await checkpointer.close()
