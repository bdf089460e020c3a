"""What the model sees under ``Compaction``: the view shrinks, the transcript never does."""

from __future__ import annotations

import itertools
import logging
from typing import Any

import pytest

from lovia import Agent, InMemoryResultStore, InMemorySession, Runner
from lovia.context import Compaction
from lovia.events import ContextCompacted, RunEvent
from lovia.messages import tool_message
from lovia.testing import call, text

from .support import (
    ScriptedProvider,
    assert_paired,
    dumped,
    fetch_tool,
    of_type,
    page,
    tool_messages,
)

PAGES = 8


def reading_agent(policy: Compaction, chars: int = 2_000) -> tuple[Agent, ScriptedProvider]:
    script: list[Any] = [call("fetch", {"n": i}, call_id=f"c{i}") for i in range(PAGES)]
    model = ScriptedProvider([*script, text("done")])
    return Agent("reader", model=model, tools=[fetch_tool(chars)], context_policy=policy), model


async def run_collecting(agent: Agent, prompt: str, **kwargs: Any) -> list[RunEvent]:
    handle = Runner.stream(agent, prompt, **kwargs)
    events = [e async for e in handle]
    await handle.result()
    return events


def small_window() -> Compaction:
    return Compaction(context_window=4_000, reserve_output_tokens=500)


async def test_view_shrinks_under_pressure_while_transcript_and_session_stay_whole() -> None:
    """Compaction changes only the view: result.entries and the session keep every output."""
    agent, model = reading_agent(small_window())
    session = InMemorySession()
    handle = Runner.stream(agent, "read all pages", session=session, session_id="u1")
    events = [e async for e in handle]
    result = await handle.result()

    last = model.calls[-1]
    shown = [m.content for m in tool_messages(last)]
    assert any("cleared to save context" in c for c in shown)
    assert sum(len(c) for c in shown) < PAGES * 2_000
    compacted = of_type(events, "context_compacted")
    assert compacted, "a compaction must be announced"
    first = compacted[0]
    assert isinstance(first, ContextCompacted)
    assert first.tokens_after < first.tokens_before
    assert "unchanged" in first.text and first.notice is not None and not first.notice.reactive
    # as in lovia 0.9.119: the transcript and the view it became, the session, the notice
    assert first.session_id == "u1"
    before_outputs = [e.output for e in first.entries_before if e.type == "tool_result"]
    after_outputs = [e.output for e in first.entries_after if e.type == "tool_result"]
    assert len(after_outputs) == len(before_outputs)  # pairs kept, outputs shortened
    assert sum(map(len, after_outputs)) < sum(map(len, before_outputs))
    assert first.notice.reason in ("offload", "clear", "offload+clear")
    assert first.notice.tokens_before == first.tokens_before
    (segment,) = await session.segments("u1")
    assert segment.meta["context_notice"] == compacted[-1].notice.to_dict()

    outputs = [e.output for e in result.entries if e.type == "tool_result"]
    assert outputs == [page(i, 2_000) for i in range(PAGES)]
    stored = [e.output for e in await session.load("u1") if e.type == "tool_result"]
    assert stored == outputs


async def test_calls_and_results_stay_paired_in_every_view() -> None:
    """A view never holds a result without its call, or a call without its result."""
    agent, model = reading_agent(small_window())
    await Runner.run(agent, "read all pages")
    for messages in model.calls:
        assert_paired(messages)


async def test_compacted_prefix_is_byte_identical_on_later_turns() -> None:
    """Decisions are sticky: between compactions each view extends the previous one exactly,
    and a marker once shown is shown again, byte for byte, at the same place."""
    agent, model = reading_agent(small_window())
    events = await run_collecting(agent, "read all pages")
    assert of_type(events, "context_compacted")
    views = [dumped(m) for m in model.calls]
    markers_seen = 0
    for before, after in itertools.pairwise(views):
        for i, message in enumerate(before):
            if "cleared to save context" in message:
                markers_seen += 1
                assert after[i] == message
        # A turn that compacted further changes only what it newly cleared.
        changed = [
            i for i, (x, y) in enumerate(zip(before, after[: len(before)], strict=True)) if x != y
        ]
        assert all("cleared to save context" in after[i] for i in changed)
    assert markers_seen > 0
    # Hysteresis: fewer compactions than turns over the limit.
    assert 1 <= len(of_type(events, "context_compacted")) < len(model.calls) - 1


async def test_views_between_compactions_are_exact_prefixes() -> None:
    """After a compaction, the next view starts with the previous view unchanged (cache hit)."""
    agent, model = reading_agent(small_window())
    handle = Runner.stream(agent, "read all pages")
    compacted_turns: list[int] = []
    turn = 0
    async for event in handle:
        if event.type == "turn_started":
            turn += 1
        if event.type == "context_compacted":
            compacted_turns.append(turn)
    await handle.result()
    checked = 0
    for j in range(compacted_turns[0] - 1, len(model.calls) - 1):
        if j + 2 in compacted_turns:  # call j + 1 is the one turn j + 2 made
            continue
        before, after = dumped(model.calls[j]), dumped(model.calls[j + 1])
        assert after[: len(before)] == before
        checked += 1
    assert checked > 0


async def test_latest_user_message_and_latest_turn_are_never_compacted() -> None:
    """The protected tail: the latest user message and the newest call/result pair stay
    verbatim, however small the window."""
    policy = Compaction(
        context_window=1_200, reserve_output_tokens=200, summarizer=lambda span: "read pages"
    )
    agent, model = reading_agent(policy, chars=1_500)
    session = InMemorySession()
    await Runner.run(
        Agent("warmup", model=ScriptedProvider([text("hi")])),
        "hello",
        session=session,
        session_id="s",
    )
    await Runner.run(agent, "read every page please", session=session, session_id="s")
    for i, messages in enumerate(model.calls):
        users = [m.content for m in messages if m.role == "user"]
        assert users[-1] == "read every page please"
        if i:  # the result of the previous turn's call is shown in full
            assert messages[-1] == tool_message(f"c{i - 1}", page(i - 1, 1_500))
        assert_paired(messages)


async def test_huge_earlier_result_leaves_for_a_recall_marker_without_a_summary() -> None:
    """api.md: with Compaction(context_window=8_000, reserve_output_tokens=1_000, store=...)
    one huge earlier tool result becomes a marker naming recall_tool_result("<ref>"), and no
    summarizer call happens."""
    summaries: list[int] = []

    def summarizer(entries: list[Any]) -> str:
        summaries.append(len(entries))
        return "summary"

    store = InMemoryResultStore()
    policy = Compaction(
        context_window=8_000, reserve_output_tokens=1_000, store=store, summarizer=summarizer
    )
    model = ScriptedProvider([call("fetch", {"n": 1}, call_id="big"), text("read it"), text("ok")])
    agent = Agent("a", model=model, tools=[fetch_tool(40_000)], context_policy=policy)
    session = InMemorySession()
    await Runner.run(agent, "fetch the report", session=session, session_id="s")
    await Runner.run(agent, "thanks, what next?", session=session, session_id="s")

    assert len(model.calls) == 3 and summaries == []
    (tool_msg,) = tool_messages(model.calls[-1])
    content = tool_msg.content
    assert len(content) < 1_000
    assert content.startswith(page(1, 40_000)[:200])
    ref = content.split('recall_tool_result("')[1].split('"')[0]
    assert await store.get(ref) == page(1, 40_000)


async def test_without_a_window_the_view_is_the_transcript() -> None:
    """context_window=None: nothing is compacted ahead of time, however long the prompt."""
    agent, model = reading_agent(Compaction(), chars=20_000)
    result = await Runner.run(agent, "read all pages")
    outputs = [m.content for m in tool_messages(model.calls[-1])]
    assert outputs == [e.output for e in result.entries if e.type == "tool_result"]
    assert [t["name"] for t in model.tools[0]] == ["fetch", "recall_tool_result"]  # offered, unused


async def test_summary_is_the_last_resort_and_keeps_the_latest_user_message() -> None:
    """When clearing results is not enough (a long chat without tools), the oldest turns are
    summarized once by the summarizer; the latest user message stays verbatim."""
    seen: list[list[Any]] = []

    def summarizer(entries: list[Any]) -> str:
        seen.append(entries)
        return "The user and assistant talked about the weather for a long time."

    policy = Compaction(context_window=2_000, reserve_output_tokens=200, summarizer=summarizer)
    model = ScriptedProvider([text("reply " * 60) for _ in range(12)])
    agent = Agent("chat", model=model, context_policy=policy)
    session = InMemorySession()
    for i in range(12):
        await Runner.run(agent, f"question {i}: " + "words " * 60, session=session, session_id="s")
    assert seen, "the summarizer must run once results cannot be cleared"
    last = model.calls[-1]
    assert any("talked about the weather" in str(m.content) for m in last)
    assert [m.content for m in last if m.role == "user"][-1].startswith("question 11:")
    assert len(await session.load("s")) == 24  # the session keeps every message


async def test_summary_uses_the_runs_own_provider_when_no_summarizer_is_given() -> None:
    """Stage 3 calls request.provider: the scripted model sees the summary prompt."""
    policy = Compaction(context_window=2_000, reserve_output_tokens=200)

    def answer(messages: list[dict[str, Any]]) -> Any:
        if "memory of a conversation" in str(messages[0].content):
            return text("SUMMARY: chatted about birds.")
        return text("reply " * 60)

    model = ScriptedProvider([answer] * 40)
    agent = Agent("chat", model=model, context_policy=policy)
    session = InMemorySession()
    for i in range(12):
        await Runner.run(agent, f"question {i}: " + "words " * 60, session=session, session_id="s")
    summary_calls = [c for c in model.calls if "memory of a conversation" in str(c[0].content)]
    assert summary_calls
    assert any("SUMMARY: chatted about birds." in str(m.content) for m in model.calls[-1])


async def test_a_protected_tail_that_covers_the_whole_view_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``keep_recent_tokens`` at or above the budget fences every entry off: nothing is ever
    compacted and the provider refuses the view one day. Said as a warning whenever the view
    is over budget, as 0.9.119 says it (it was a debug line)."""
    policy = Compaction(context_window=4_000, keep_recent_tokens=100_000)
    agent, model = reading_agent(policy)
    with caplog.at_level(logging.WARNING, logger="lovia.context"):
        events = await run_collecting(agent, "read them all")
    assert of_type(events, ContextCompacted) == []
    assert len(model.calls[-1]) > PAGES * 2  # every result still in the view
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("protected tail covers the entire view" in m for m in warned), warned
    assert any("keep_recent_tokens=100000" in m for m in warned)
