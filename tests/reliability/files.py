"""Helpers for the damaged-file tests: fill a database, read its bytes, poke rows as another
program would (plain ``sqlite3``, never through lovia)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from lovia import (
    AssistantTextEntry,
    InputEntry,
    RunHead,
    SQLiteCheckpointer,
    SQLiteSession,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

ENTRIES: list[TranscriptEntry] = [
    InputEntry(role="user", content="what is 2+2?"),
    ToolCallEntry(call_id="c1", name="add", arguments='{"a": 2, "b": 2}'),
    ToolResultEntry(call_id="c1", output="4"),
    AssistantTextEntry(content="4"),
]


async def filled(path: Path) -> None:
    """A database holding one session segment and one checkpointed run."""
    async with SQLiteSession(path) as s, SQLiteCheckpointer(path) as cp:
        await s.append("u1", ENTRIES, run_id="r1")
        await cp.append("r1", ENTRIES[:2], RunHead(agent_name="a", turns=1))
        await cp.append("r1", ENTRIES[2:], RunHead(agent_name="a", turns=2, status="completed"))


def file_bytes(path: Path) -> dict[str, bytes]:
    """The bytes of the database and any journal beside it."""
    out: dict[str, bytes] = {}
    for suffix in ("", "-wal", "-journal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            out[suffix or "db"] = p.read_bytes()
    return out


def poke(path: Path, sql: str, *params: object) -> None:
    """Change the file behind lovia's back, as a buggy tool or a bad disk would."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(sql, params)
    finally:
        conn.close()


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()
