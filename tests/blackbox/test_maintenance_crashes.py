"""A process killed (SIGKILL) while it appends, trims and rewinds one session leaves it whole:
every write is all or nothing, on SQLite in both journal modes and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lovia import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry

from ..stores.pg import drop_prefix, fresh_prefix, postgres_dsn

CHILD = Path(__file__).with_name("maintenance_child.py")
ROOT = Path(__file__).resolve().parents[2]


def _check_whole(segments: list[Any]) -> int:
    """Every stored run is a run the child wrote, possibly cut at a rewind or trimmed."""
    run_ids = [s.run_id for s in segments]
    assert len(run_ids) == len(set(run_ids))
    total = 0
    for seg in segments:
        entries = seg.entries
        total += len(entries)
        assert entries and isinstance(entries[0], InputEntry)
        n = seg.run_id[1:]
        assert entries[0].content == f"q{n}"
        calls = [e.call_id for e in entries if isinstance(e, ToolCallEntry)]
        results = [e for e in entries if isinstance(e, ToolResultEntry)]
        assert sorted(calls) == sorted(r.call_id for r in results), seg.run_id
        for r in results:
            full = f"{r.call_id}:" + "o" * 3000
            if r.output != full:  # trimmed: a prefix of the original, then the marker
                assert len(r.output) < len(full)
                assert "3" in r.output or "," in r.output
        if isinstance(entries[-1], AssistantTextEntry):
            assert entries[-1].content == f"a{n}"
            assert len(entries) == 8
    return total


@pytest.mark.parametrize("kind", ["sqlite", "sqlite-wal", "postgres"])
def test_kills_during_append_trim_and_rewind_leave_every_run_whole(
    tmp_path: Path, kind: str
) -> None:
    spec: dict[str, Any] = {"kind": kind, "path": str(tmp_path / "s.db")}
    if kind == "postgres":
        spec.update(dsn=postgres_dsn(), prefix=fresh_prefix())
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    )
    rng = random.Random(7)
    kills = 0
    try:
        for attempt in range(1, 9):
            spec["seed"] = attempt
            child = subprocess.Popen(
                [sys.executable, str(CHILD), json.dumps(spec)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
            assert child.stdout is not None
            # let it get going (a few operations), then kill it at a random moment
            for _ in range(rng.randint(3, 25)):
                if not child.stdout.readline():
                    break
            time.sleep(rng.random() * 0.05)
            child.send_signal(signal.SIGKILL)
            _, err = child.communicate()
            assert child.returncode == -signal.SIGKILL, err.decode(errors="replace")
            kills += 1
            segments = asyncio.run(_read(spec))
            _check_whole(segments)
        if kind != "postgres":
            with sqlite3.connect(spec["path"]) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            conn.close()
    finally:
        if kind == "postgres":
            drop_prefix(spec["dsn"], spec["prefix"])
    assert kills == 8


async def _read(spec: dict[str, Any]) -> list[Any]:
    if spec["kind"] == "postgres":
        from lovia import PostgresSession

        session: Any = PostgresSession(spec["dsn"], table_prefix=spec["prefix"])
    else:
        session = SQLiteSession(spec["path"], wal=spec["kind"] == "sqlite-wal")
    try:
        segments = await session.segments("s")
        assert await session.load("s") == [e for s in segments for e in s.entries]
        return list(segments)
    finally:
        await session.close()
