"""S9 with reused call ids: providers that number calls per turn (``call_0``) reuse ids
across runs and turns, yet every marker a trim or the view writes leads back to its own
output; re-trimming archives nothing twice; markers of older versions still recall."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, FileResultStore, InMemoryResultStore, InMemorySession, Runner
from lovia.context import Compaction, OffloadToolResults, content_digest
from lovia.messages import AssistantTurn, Message
from lovia.testing import batch, call, text
from tests.stores.backends import session, session_backend

from .support import ScriptedProvider, fetch_tool, page, tool_messages

__all__ = ["session", "session_backend"]  # fixtures used by name

REF = re.compile(r'recall_tool_result\("([^"]+)"\)')
CHARS = 3_000


def refs_shown(messages: list[Message]) -> list[str]:
    """The references the markers in a view name, oldest first."""
    return [r for m in tool_messages(messages) for r in REF.findall(m.content or "")]


def recall_what_the_markers_name(messages: list[Message]) -> AssistantTurn:
    """A model that reads its view and recalls every output a marker stands for."""
    refs = refs_shown(messages)
    assert refs, "the view shows no marker"
    return batch(*[("recall_tool_result", {"ref": r}, f"k{i}") for i, r in enumerate(refs)])


async def fetch_runs(session: Any, policy: Compaction, call_ids: list[str]) -> None:
    """One run per call id, run n fetching page n."""
    for n, cid in enumerate(call_ids):
        model = ScriptedProvider([call("fetch", {"n": n}, call_id=cid), text(f"got {n}")])
        agent = Agent("a", model=model, tools=[fetch_tool(CHARS)], context_policy=policy)
        await Runner.run(agent, f"page {n}?", session=session, session_id="u1")


async def recall_run(session: Any, policy: Compaction) -> list[str]:
    """A run whose model recalls what every marker in its view names; the outputs."""
    model = ScriptedProvider([recall_what_the_markers_name, text("recalled")])
    agent = Agent("a", model=model, tools=[fetch_tool(CHARS)], context_policy=policy)
    result = await Runner.run(agent, "the old pages?", session=session, session_id="u1")
    return recalled(result.entries)


def recalled(entries: list[Any]) -> list[str]:
    """The outputs of the recall calls ``k0``, ``k1``... in that order (parallel calls may
    finish in any order)."""
    done = {e.call_id: e.output for e in entries if e.type == "tool_result"}
    return [done[f"k{i}"] for i in range(len(done)) if f"k{i}" in done]


def digest_files(archive: Path) -> list[str]:
    return sorted(p.name for p in archive.iterdir() if re.fullmatch(r"[0-9a-f]{24}\.txt", p.name))


async def test_a_reused_call_id_recalls_each_trimmed_output_on_every_backend(
    session: Any, tmp_path: Path
) -> None:
    policy = Compaction(store=FileResultStore(tmp_path / "archive"))
    await fetch_runs(session, policy, ["call_0"] * 3)
    assert await session.trim_tool_results("u1", keep_chars=50, keep_runs=1) == 2
    assert await recall_run(session, policy) == [page(0, CHARS), page(1, CHARS)]


async def test_re_trimming_archives_nothing_twice_and_recall_still_works(
    session: Any, tmp_path: Path
) -> None:
    archive = tmp_path / "archive"
    policy = Compaction(store=FileResultStore(archive))
    await fetch_runs(session, policy, ["call_0", "call_0", "call_1", "call_0"])
    files = digest_files(archive)
    assert files == sorted(f"{content_digest(page(n, CHARS))}.txt" for n in range(4))
    assert await session.trim_tool_results("u1", keep_chars=50, keep_runs=1) == 3
    trimmed = await session.load("u1")
    assert await session.trim_tool_results("u1", keep_chars=50, keep_runs=1) == 0
    assert await session.trim_tool_results("u1", keep_chars=10, keep_runs=0) == 1
    assert (await session.load("u1"))[:-4] == trimmed[:-4]  # trimmed outputs stay as they were
    assert digest_files(archive) == files
    # a new process (a new policy on the same archive) recalls each output by its marker,
    # twice, and archives nothing twice doing so
    fresh = Compaction(store=FileResultStore(archive))
    assert await recall_run(session, fresh) == [page(n, CHARS) for n in range(4)]
    assert await recall_run(session, fresh) == [page(n, CHARS) for n in range(4)]
    assert digest_files(archive) == files


@pytest.mark.parametrize(
    "marker",
    [
        '\n[lovia: trimmed {cut} of {total} characters; recall_tool_result("{cid}") returns '
        "the whole output if a result store archived it]",
        '\n[... {cut:,} chars trimmed from stored history; recall_tool_result("{cid}") returns '
        "the full output only if it was archived to a result store]",
    ],
    ids=["earlier-lovia", "lovia-0.9.119"],
)
async def test_a_marker_naming_a_call_id_still_recalls(marker: str, tmp_path: Path) -> None:
    """A session trimmed before markers named digests (by an earlier version of lovia, or by
    0.9.119) names call ids: recall finds the archived output by the call id."""
    store = FileResultStore(tmp_path / "archive")
    first = InMemorySession()
    await fetch_runs(first, Compaction(store=store), ["c0", "c1", "c2"])
    old = InMemorySession()  # the same runs, as an older trim left them
    for seg in await first.segments("u1"):
        entries = [
            e.model_copy(
                update={
                    "output": e.output[:50]
                    + marker.format(cut=CHARS - 50, total=CHARS, cid=e.call_id)
                }
            )
            if e.type == "tool_result" and e.call_id != "c2"
            else e
            for e in seg.entries
        ]
        await old.append("u1", entries, run_id=seg.run_id)
    assert await old.trim_tool_results("u1", keep_chars=50, keep_runs=1) == 0  # already trimmed
    outputs = await recall_run(old, Compaction(store=FileResultStore(tmp_path / "archive")))
    assert outputs == [page(0, CHARS), page(1, CHARS)]


async def test_an_old_marker_naming_a_reused_call_id_recalls_the_latest_it_stands_for(
    tmp_path: Path,
) -> None:
    """Two old markers naming one reused id are ambiguous; recall gives the output of the
    latest trimmed one, not the untrimmed later result the model already sees."""
    store = FileResultStore(tmp_path / "archive")
    first = InMemorySession()
    await fetch_runs(first, Compaction(store=store), ["call_0"] * 3)
    old = InMemorySession()
    for seg in await first.segments("u1"):
        entries = [
            e.model_copy(
                update={
                    "output": e.output[:50] + f"\n[lovia: trimmed {CHARS - 50} of {CHARS} "
                    'characters; recall_tool_result("call_0") returns the whole output if a '
                    "result store archived it]"
                }
            )
            if e.type == "tool_result" and not e.output.startswith("page 2")
            else e
            for e in seg.entries
        ]
        await old.append("u1", entries, run_id=seg.run_id)
    model = ScriptedProvider(
        [call("recall_tool_result", {"ref": "call_0"}, call_id="k"), text("ok")]
    )
    agent = Agent("a", model=model, context_policy=Compaction(store=store))
    result = await Runner.run(agent, "that page?", session=old, session_id="u1")
    assert [e.output for e in result.entries if e.type == "tool_result"] == [page(1, CHARS)]


async def test_offloaded_results_of_a_reused_call_id_in_one_run_come_back() -> None:
    """Within one run each turn's call is ``call_0``: the view offloads the older outputs to
    markers naming their digests, and recall returns each one, not the latest."""
    pages = 8
    script: list[Any] = [call("fetch", {"n": n}, call_id="call_0") for n in range(pages)]
    model = ScriptedProvider([*script, recall_what_the_markers_name, text("done")])
    policy = Compaction(
        context_window=12_000,
        reserve_output_tokens=1_000,
        store=InMemoryResultStore(),
        summarizer=lambda entries: "pages were read and recalled",  # the recalls fill the view
    )
    agent = Agent("a", model=model, tools=[fetch_tool(6_000)], context_policy=policy)
    result = await Runner.run(agent, "read every page, then the first ones again")
    shown = refs_shown(model.calls[pages])
    assert len(shown) >= 2 and len(set(shown)) == len(shown)
    by_digest = {content_digest(page(n, 6_000)): page(n, 6_000) for n in range(pages)}
    assert recalled(result.entries) == [by_digest[r] for r in shown]


async def test_with_stages_every_output_is_archived_for_a_later_trim(tmp_path: Path) -> None:
    """A policy running your stages archives every output too (not only what a stage
    offloads), so a session trimmed later still recalls each one."""
    policy = Compaction(
        store=FileResultStore(tmp_path / "archive"), stages=[OffloadToolResults(min_chars=10**6)]
    )
    session = InMemorySession()
    await fetch_runs(session, policy, ["call_0"] * 3)
    assert await session.trim_tool_results("u1", keep_chars=50, keep_runs=1) == 2
    assert await recall_run(session, policy) == [page(0, CHARS), page(1, CHARS)]
