"""S9: with a FileResultStore on the context policy, a trimmed output can still be recovered
with `recall_tool_result`, by the reference its trim marker names."""

from __future__ import annotations

import re
from pathlib import Path

from lovia import Agent, Compaction, FileResultStore, Runner, SQLiteSession, tool
from lovia.testing import ScriptedProvider, call, text


@tool
def fetch(n: int) -> str:
    """Fetch report n."""
    return f"report {n}: " + "x" * 1000


async def recall_after_trim(tmp_path: Path, call_ids: list[str]) -> list[str]:
    """One run per call id (each fetching report i), trim all but the last run, then in a
    new run recall each trimmed output by the reference its marker names."""
    policy = Compaction(store=FileResultStore(tmp_path / "archive"))
    session = SQLiteSession(tmp_path / "chat.db")
    for n, cid in enumerate(call_ids):
        model = ScriptedProvider([call("fetch", {"n": n}, call_id=cid), text(f"got {n}")])
        agent = Agent("a", model=model, tools=[fetch], context_policy=policy)
        await Runner.run(agent, f"report {n}?", session=session, session_id="u1")
    assert await session.trim_tool_results("u1", keep_chars=50, keep_runs=1) == len(call_ids) - 1
    outputs = [e.output for e in await session.load("u1") if e.type == "tool_result"]
    refs = [re.findall(r'recall_tool_result\("([^"]+)"\)', o)[-1] for o in outputs[:-1]]
    script = [call("recall_tool_result", {"ref": r}, call_id=f"k{i}") for i, r in enumerate(refs)]
    model = ScriptedProvider([*script, text("recalled")])
    agent = Agent("a", model=model, tools=[fetch], context_policy=policy)
    result = await Runner.run(agent, "the old reports?", session=session, session_id="u1")
    await session.close()
    return [e.output[:9] for e in result.entries if e.type == "tool_result"]


async def test_each_trimmed_output_comes_back_by_its_marker(tmp_path: Path) -> None:
    got = await recall_after_trim(tmp_path, ["call_a1", "call_b2", "call_c3"])
    assert got == ["report 0:", "report 1:"]


async def test_a_call_id_reused_by_later_runs_still_recalls_the_trimmed_output(
    tmp_path: Path,
) -> None:
    """Providers that number calls per turn reuse ids across runs: the marker names the
    output's content digest, so each trimmed output comes back, not the latest run's."""
    got = await recall_after_trim(tmp_path, ["call_0", "call_0", "call_0"])
    assert got == ["report 0:", "report 1:"]
