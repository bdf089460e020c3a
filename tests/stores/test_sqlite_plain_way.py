"""Issue 28: SQLite's speed machinery (calls run on the event loop's thread) sits behind one
seam with a plain way under it; with the fast way off every call takes a thread, and the
stores store and read exactly the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, CheckpointOptions, Runner, tool
from lovia.stores import SQLiteCheckpointer, SQLiteSession, _sqlite_inline
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import entry_to_dict


async def _run(folder: Path) -> tuple[list[dict[str, Any]], dict[str, Any], bool]:
    """A two-turn run into WAL stores in ``folder``: the session's entries, the run's
    snapshot, and whether a save could be made before returning (``append_now``)."""

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedProvider([call("add", {"a": 1, "b": 2}), text("3")])
    agent = Agent(name="calc", model=model, tools=[add])
    async with SQLiteSession(folder / "s.db", wal=True) as session:
        async with SQLiteCheckpointer(folder / "c.db", wal=True) as cp:
            result = await Runner.run(
                agent,
                "add",
                session=session,
                session_id="s1",
                checkpoint=CheckpointOptions(cp, "r1"),
            )
            assert result.output == "3"
            snapshot = await cp.load("r1")
            assert snapshot is not None
            saved_now = cp.append_now("r2", [], snapshot.head)
            entries = [entry_to_dict(e) for e in await session.load("s1")]
            return entries, snapshot.to_dict(), saved_now


def _comparable(snapshot: dict[str, Any]) -> dict[str, Any]:
    """A snapshot without what differs from run to run (times)."""
    return {k: v for k, v in snapshot.items() if not k.endswith("_at") and k != "timeline"}


async def test_the_plain_way_stores_what_the_fast_way_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fast").mkdir()
    (tmp_path / "plain").mkdir()
    fast = await _run(tmp_path / "fast")
    monkeypatch.setattr(_sqlite_inline.InlineCalls, "inline", False)
    plain = await _run(tmp_path / "plain")
    assert plain[0] == fast[0]
    assert _comparable(plain[1]) == _comparable(fast[1])
    assert fast[2] is True  # a WAL store with nothing queued saves before it returns
    assert plain[2] is False  # the fast way is off: nothing written, append instead
