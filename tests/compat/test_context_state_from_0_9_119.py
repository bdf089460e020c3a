"""Compaction decisions that lovia 0.9.119 stored in a session file carry over here.

``crossversion/write_context_file.py``, run by 0.9.119, left ``context.db``: two sessions
whose segment meta holds 0.9.119's ``context_state`` record (cleared and offloaded results by
call id; a summary with the fingerprint of the prefix it covers). The next run here, on a
copy of that file, starts from those decisions: the first view already shows the cleared,
offloaded and summarized entries as markers, the transcript stays whole.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from lovia import Agent, Runner, SQLiteSession, tool
from lovia.context import Compaction, CompactionState
from lovia.testing import ScriptedProvider, text

FROZEN = Path(__file__).resolve().parent / "crossversion" / "written-by-0.9.119" / "context.db"


def page(n: int) -> str:
    """What the tool returned for page ``n`` in the file's runs."""
    return f"page {n}: " + "lorem ipsum dolor sit amet " * (200 if n % 3 == 0 else 60)


@tool
def fetch(n: int) -> str:
    """Fetch page n."""
    return page(n)


def record(path: Path, session_id: str) -> CompactionState:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as db:
        (meta,) = db.execute(
            "SELECT meta_json FROM session_runs WHERE session_id = ?", (session_id,)
        ).fetchone()
    return CompactionState.load(json.loads(meta)["context_state"])


async def first_view(tmp_path: Path, session_id: str, window: int) -> dict[str, str]:
    """Run once more on a copy of the file; the tool messages of the first model call."""
    copy = tmp_path / "context.db"
    shutil.copyfile(FROZEN, copy)
    model = ScriptedProvider([text("ok")])
    policy = Compaction(context_window=window, reserve_output_tokens=1_000)
    agent = Agent(name="a", model=model, tools=[fetch], context_policy=policy)
    session = SQLiteSession(copy)
    result = await Runner.run(agent, "thanks", session=session, session_id=session_id)
    assert result.output == "ok"
    stored = [e for e in await session.load(session_id) if e.type == "tool_result"]
    assert [len(e.output) for e in stored] == [len(page(n)) for n in range(16)]
    return {m.tool_call_id or "": m.content for m in model.calls[0] if m.role == "tool"}


async def test_cleared_and_offloaded_results_stay_markers(tmp_path: Path) -> None:
    old = record(FROZEN, "cleared")
    assert old.cleared == {"c1", "c2", "c4", "c5", "c7"} and old.summary is None
    assert set(old.offloaded) == {"c0", "c3", "c6", "c9", "c12"}
    view = await first_view(tmp_path, "cleared", 9_000)
    for call_id in old.cleared:
        assert "cleared" in view[call_id] and "lorem" not in view[call_id]
    for call_id, rec in old.offloaded.items():
        assert view[call_id].startswith(f"page {call_id[1:]}: lorem")
        assert len(view[call_id]) < rec.chars / 4
    assert view["c15"] == page(15)  # the newest result stays whole


async def test_the_summary_still_stands_for_the_prefix_it_covers(tmp_path: Path) -> None:
    old = record(FROZEN, "summarized")
    assert old.summary is not None and old.summary.covered > 20
    copy = tmp_path / "peek.db"
    shutil.copyfile(FROZEN, copy)
    model = ScriptedProvider([text("ok")])
    agent = Agent(
        name="a",
        model=model,
        tools=[fetch],
        context_policy=Compaction(context_window=5_000, reserve_output_tokens=1_000),
    )
    await Runner.run(agent, "thanks", session=SQLiteSession(copy), session_id="summarized")
    contents = [m.content for m in model.calls[0]]
    assert any(old.summary.text in c for c in contents)
    shown = {m.tool_call_id for m in model.calls[0] if m.role == "tool"}
    # every result the summary covers (the first 15 body entries hold c0-c6) is gone
    assert not shown & {f"c{n}" for n in range(7)}
    assert "c15" in shown
