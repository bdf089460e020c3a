"""The stage API: ``Compaction(stages=[...])`` with lovia's stages and a user's own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    ContextOverflowError,
    FileResultStore,
    InMemorySession,
    Runner,
    SQLiteSession,
)
from lovia.context import (
    REQUIRED_SECTIONS,
    ClearToolResults,
    Compaction,
    CompactionState,
    OffloadToolResults,
    StageContext,
    SummarizeHistory,
    render_view,
)
from lovia.events import ContextCompacted
from lovia.testing import batch, call, text
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry

from .support import RefusingProvider, ScriptedProvider, assert_paired, fetch_tool, page

BIG = 6_000
REF = re.compile(r'recall_tool_result\("([^"]+)"\)')


def three_fetches() -> Any:
    return batch(*[("fetch", {"n": n}, f"c{n}") for n in range(3)])


def shown_whole(messages: list[Any]) -> dict[str, bool]:
    return {m.tool_call_id: len(m.content) == BIG for m in messages if m.role == "tool"}


async def test_offloaded_results_recall_whole_from_the_store_after_a_trim(tmp_path: Path) -> None:
    """A real SQLite session and file store: the offload stage previews the older results,
    the newest stays whole, and after the session's outputs are trimmed the model still
    gets the whole output back through the reference the marker names."""
    db, archive = tmp_path / "chat.db", tmp_path / "archive"
    stages = [OffloadToolResults(min_chars=1_000, keep_last=1)]
    async with SQLiteSession(db) as session:
        policy = Compaction(
            context_window=5_000,
            reserve_output_tokens=0,
            store=FileResultStore(archive),
            stages=stages,
        )
        model = ScriptedProvider([three_fetches(), text("fetched"), text("hi")])
        agent = Agent("a", model=model, tools=[fetch_tool(BIG)], context_policy=policy)
        await Runner.run(agent, "fetch three pages", session=session, session_id="s")
        handle = Runner.stream(agent, "hello", session=session, session_id="s")
        notices = [e.notice async for e in handle if isinstance(e, ContextCompacted)]
        await handle.result()
        view = model.calls[-1]
        assert_paired(view)
        assert shown_whole(view) == {"c0": False, "c1": False, "c2": True}
        assert [n.reason for n in notices] == ["offload"]
        marker = next(m.content for m in view if m.role == "tool" and m.tool_call_id == "c0")
        (ref,) = REF.findall(marker)
        assert await session.trim_tool_results("s", keep_chars=50, keep_runs=0) == 3

    async with SQLiteSession(db) as session:  # a new process would see the same files
        model = ScriptedProvider([call("recall_tool_result", {"ref": ref}), text("ok")])
        policy = Compaction(store=FileResultStore(archive), stages=stages)
        agent = Agent("a", model=model, tools=[fetch_tool(BIG)], context_policy=policy)
        result = await Runner.run(agent, "show page 0 again", session=session, session_id="s")
    recalled = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert [e.output for e in recalled] == [page(0, BIG)]


class ClearAll:
    """A user's stage: clears every tool result outside the protected tail, once."""

    name = "clear_all"

    def __init__(self) -> None:
        self.contexts: list[StageContext] = []
        self.over: list[bool] = []  # whether the view was over the target when asked

    async def plan(self, body: list[TranscriptEntry], ctx: StageContext) -> bool:
        self.contexts.append(ctx)
        self.over.append(ctx.current_tokens > ctx.budget.target_tokens)
        new = False
        for e in body[: ctx.protected_from]:
            if isinstance(e, ToolResultEntry) and e.call_id not in ctx.state.cleared:
                ctx.state.cleared.add(e.call_id)
                new = True
        return new


async def test_a_users_stage_decides_once_and_later_runs_show_the_same_view() -> None:
    stage = ClearAll()
    policy = Compaction(context_window=5_000, reserve_output_tokens=0, stages=[stage])
    model = ScriptedProvider([three_fetches(), text("fetched"), text("one"), text("two")])
    agent = Agent("a", model=model, tools=[fetch_tool(BIG)], context_policy=policy)
    session = InMemorySession()
    await Runner.run(agent, "fetch three pages", session=session, session_id="s")
    await Runner.run(agent, "first", session=session, session_id="s")
    asked = len(stage.contexts)
    assert asked >= 1
    ctx = stage.contexts[-1]
    assert not ctx.aggressive and ctx.budget.window == 5_000
    assert all(stage.over)  # asked only when over budget
    second = await Runner.run(agent, "second", session=session, session_id="s")
    first_view, second_view = model.calls[-2], model.calls[-1]
    assert shown_whole(first_view) == {"c0": False, "c1": False, "c2": False}
    # The decisions were carried in the session: the next run renders the same prefix.
    assert [m.content for m in second_view[: len(first_view)]] == [m.content for m in first_view]
    assert len(stage.contexts) == asked  # nothing new to decide
    assert second.output == "two"
    stored = [e for e in await session.load("s") if isinstance(e, ToolResultEntry)]
    assert [len(e.output) for e in stored] == [BIG] * 3  # the transcript is never changed


async def test_a_stage_that_raises_keeps_what_it_decided_and_the_run_goes_on() -> None:
    class DecideThenFail:
        name = "flaky"

        async def plan(self, body: list[TranscriptEntry], ctx: StageContext) -> bool:
            ctx.state.cleared.add("c0")
            raise RuntimeError("stage bug")

    policy = Compaction(context_window=5_000, reserve_output_tokens=0, stages=[DecideThenFail()])
    model = ScriptedProvider([three_fetches(), text("fetched")])
    agent = Agent("a", model=model, tools=[fetch_tool(BIG)], context_policy=policy)
    handle = Runner.stream(agent, "fetch three pages")
    notices = [e.notice async for e in handle if isinstance(e, ContextCompacted)]
    result = await handle.result()
    assert result.output == "fetched"
    assert [n.reason for n in notices] == ["flaky"]
    assert shown_whole(model.calls[-1]) == {"c0": False, "c1": True, "c2": True}


class NamingProvider(RefusingProvider):
    """Refuses like ``RefusingProvider``, naming the model's window as real endpoints do."""

    window = 4_000

    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        if self.refusals > 0:
            self.refusals -= 1
            raise ContextOverflowError("prompt is too long", reported_window=self.window)
        async for delta in self.inner.stream(entries, **kwargs):
            yield delta


async def test_after_a_refusal_stages_compact_hard_and_the_named_window_is_kept() -> None:
    """The provider refuses the view naming its window: the stages get an aggressive
    context, the retry goes out smaller, and the next call is budgeted on that window."""
    stage = ClearAll()
    inner = ScriptedProvider([three_fetches(), text("fetched"), text("again")])
    model = NamingProvider(inner, refusals=0)
    policy = Compaction(stages=[stage])  # no window configured
    agent = Agent("a", model=model, tools=[fetch_tool(BIG)], context_policy=policy)
    session = InMemorySession()
    await Runner.run(agent, "fetch three pages", session=session, session_id="s")
    assert stage.contexts == []  # no window known, nothing refused: the view is left whole
    model.refusals = 1
    await Runner.run(agent, "and again", session=session, session_id="s")
    assert [c.aggressive for c in stage.contexts] == [True]
    assert stage.contexts[0].model_window == 4_000
    # Only the new prompt is in the (hard) protected tail: every result is cleared.
    assert shown_whole(inner.calls[-1]) == {"c0": False, "c1": False, "c2": False}
    inner.extend([text("third")])
    await Runner.run(agent, "third", session=session, session_id="s")
    state = CompactionState.load((await session.segments("s"))[-1].meta["context_state"])
    assert list(state.learned_windows.values()) == [4_000]


async def test_summary_stage_with_the_runs_own_model() -> None:
    """``SummarizeHistory()`` asks the run's provider for the summary; the view shows it
    in place of the old span, and its tokens count in the run's usage."""
    summary = "\n".join(f"{h}\nfacts" for h in REQUIRED_SECTIONS)
    model = ScriptedProvider([text(summary), text("answer")])
    policy = Compaction(
        context_window=3_000,
        reserve_output_tokens=0,
        keep_recent_tokens=1_400,  # the older span then fits one summary request
        stages=[SummarizeHistory()],
    )
    session = InMemorySession()
    old = [InputEntry(role="user", content=f"q{i} " + "w" * 400) for i in range(25)]
    await session.append("s", old)
    agent = Agent("a", instructions="be brief", model=model, context_policy=policy)
    handle = Runner.stream(agent, "the question", session=session, session_id="s")
    notices = [e.notice async for e in handle if isinstance(e, ContextCompacted)]
    result = await handle.result()
    assert result.output == "answer"
    (notice,) = notices
    assert notice.reason == "summary" and notice.summary == summary
    view = model.calls[-1]
    assert view[0].role == "system" and "facts" in view[1].content
    assert view[-1].content == "the question" and len(view) < len(old)
    assert len(model.calls) == 2  # the summary request, then the turn
    answer_prompt = sum(len(m.text) for m in view) // 4 + 1
    assert result.usage.input_tokens > answer_prompt  # the summary's tokens are counted


def test_render_view_is_a_pure_function_of_the_transcript_and_the_state() -> None:
    entries: list[TranscriptEntry] = [
        InputEntry(role="system", content="sys"),
        ToolCallEntry(call_id="c1", name="f", arguments="{}"),
        ToolResultEntry(call_id="c1", output="x" * 900, is_error=True),
    ]
    assert all(
        a is b for a, b in zip(render_view(entries, CompactionState()), entries, strict=True)
    )
    view = render_view(entries, CompactionState(cleared={"c1"}))
    marker = view[2]
    assert isinstance(marker, ToolResultEntry)
    assert (marker.call_id, marker.is_error) == ("c1", True)
    assert REF.findall(marker.output) == ["c1"]
    assert render_view(entries, CompactionState(cleared={"c1"})) == view
    assert entries[2].output == "x" * 900


@pytest.mark.parametrize(
    "make",
    [
        lambda: OffloadToolResults(min_chars=0),
        lambda: OffloadToolResults(preview_chars=-1),
        lambda: ClearToolResults(keep_last=-1),
        lambda: SummarizeHistory(max_failures=0),
        lambda: SummarizeHistory(max_summary_chars=0),
    ],
)
def test_impossible_stage_settings_are_refused(make: Any) -> None:
    with pytest.raises(ValueError):
        make()


def test_something_that_is_not_a_stage_is_refused_with_a_hint() -> None:
    from lovia import UserError

    with pytest.raises(UserError) as info:
        Compaction(stages=[object()])  # type: ignore[list-item]
    assert info.value.hint


async def test_a_carried_summary_that_would_orphan_a_result_is_moved_back_to_a_safe_cut() -> None:
    """A summary recorded as covering up to a call but not its result would open the view
    with a result without its call (a provider refuses that); it is moved back."""
    from lovia.context import CompactionRequest, SummaryState
    from lovia.context.state import fingerprint

    body: list[TranscriptEntry] = [InputEntry(role="user", content="q")]
    for n in range(3):
        body += [
            ToolCallEntry(call_id=f"c{n}", name="f", arguments="{}"),
            ToolResultEntry(call_id=f"c{n}", output=f"result {n}"),
        ]
    scratch: dict[str, Any] = {}
    cut = 4  # after the call c1, before its result
    CompactionState(summary=SummaryState("OLD", cut, fingerprint(body[:cut]))).save(scratch)
    policy = Compaction(context_window=100_000, stages=[ClearToolResults()])
    result = await policy.compact(CompactionRequest(entries=list(body), scratch=scratch))
    summary = CompactionState.load(scratch).summary
    assert summary is not None and summary.covered == 3
    assert [type(e).__name__ for e in result.entries[:3]] == [
        "InputEntry",
        "ToolCallEntry",
        "ToolResultEntry",
    ]
    assert "OLD" in result.entries[0].content  # type: ignore[union-attr]

    scratch_body = body[1:]  # now no safe cut before the split: the summary is dropped
    CompactionState(summary=SummaryState("OLD", 1, fingerprint(scratch_body[:1]))).save(scratch)
    result = await policy.compact(CompactionRequest(entries=list(scratch_body), scratch=scratch))
    assert CompactionState.load(scratch).summary is None
    assert result.entries == scratch_body
