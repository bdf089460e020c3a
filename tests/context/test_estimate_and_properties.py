"""Token estimation, and properties of the rendered view over random transcripts."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lovia import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry
from lovia.context import Compaction, ContextRequest, estimate_tokens
from lovia.testing import to_messages

from .support import ScriptedProvider, assert_paired


def test_cjk_text_counts_about_one_token_per_character() -> None:
    """Bytes-based, not chars/4: Chinese is not four times cheaper than it is."""
    chinese = "上下文窗口管理" * 200  # 1,400 characters
    assert 1_200 <= estimate_tokens(chinese) <= 1_600
    assert estimate_tokens(chinese) > 3 * (len(chinese) // 4)


def test_english_text_counts_about_four_characters_per_token() -> None:
    english = "context window management " * 100
    assert estimate_tokens(english) == (len(english) + 3) // 4
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1


def test_estimate_follows_the_providers_reported_tokens() -> None:
    """Estimates are corrected by reported input tokens: their ratio to the estimate is kept
    in state and scales later estimates."""
    policy = Compaction(context_window=10_000, reserve_output_tokens=1_000)
    entries: list[TranscriptEntry] = [InputEntry(content="hello " * 1_000)]
    provider = ScriptedProvider()
    first = asyncio.run(policy.prepare(ContextRequest(entries, {}, provider)))
    sent = first.state["sent"]
    second = asyncio.run(
        policy.prepare(
            ContextRequest(entries, first.state, provider, reported_input_tokens=sent * 3)
        )
    )
    assert second.state["ratio"] == 2.0  # smoothed: halfway from 1.0 to the measured 3.0
    small: list[TranscriptEntry] = [InputEntry(content="hi")]
    tiny = asyncio.run(policy.prepare(ContextRequest(small, {}, provider)))
    unmoved = asyncio.run(
        policy.prepare(ContextRequest(small, tiny.state, provider, reported_input_tokens=900))
    )
    assert unmoved.state["ratio"] == 1.0  # a tiny prompt is mostly fixed overhead


# -- properties --------------------------------------------------------------------------

turn = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 3_000)),
    st.tuples(st.just("text"), st.integers(1, 3_000)),
    st.tuples(st.just("tools"), st.lists(st.integers(1, 9_000), min_size=1, max_size=3)),
)


def build(turns: list[tuple[str, Any]]) -> list[TranscriptEntry]:
    entries: list[TranscriptEntry] = [InputEntry(role="system", content="be brief")]
    entries.append(InputEntry(content="start"))
    n = 0
    for kind, size in turns:
        if kind == "user":
            entries.append(InputEntry(content=f"u{n} " + "x" * size))
        elif kind == "text":
            entries.append(AssistantTextEntry(content=f"a{n} " + "y" * size))
        else:
            ids = [f"id{n}_{k}" for k in range(len(size))]
            entries.extend(ToolCallEntry(call_id=i, name="t") for i in ids)
            entries.extend(
                ToolResultEntry(call_id=i, output=f"{i} " + "z" * s)
                for i, s in zip(ids, size, strict=True)
            )
        n += 1
    return entries


def summarizer(entries: list[TranscriptEntry]) -> str:
    return f"summary of {len(entries)} entries"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(turn, min_size=1, max_size=30), st.integers(1_500, 20_000), st.integers(0, 1))
def test_view_invariants_hold_for_any_transcript(
    turns: list[tuple[str, Any]], window: int, attempt: int
) -> None:
    """Paired calls, a verbatim tail (but for a result too big on its own after a refusal),
    JSON-safe state, an untouched transcript, and a view that renders the same again from
    its own state."""
    entries = build(turns)
    frozen = [e.model_dump() for e in entries]
    policy = Compaction(context_window=window, reserve_output_tokens=500, summarizer=summarizer)
    provider = ScriptedProvider()
    view = asyncio.run(policy.prepare(ContextRequest(entries, {}, provider, attempt=attempt)))

    messages = to_messages(view.entries)
    assert_paired(messages)
    assert view.entries[0] == entries[0]  # the system prompt is never compacted
    users = [e for e in entries if isinstance(e, InputEntry) and e.role == "user"]
    assert users[-1] in view.entries
    tail_start = max(i for i, e in enumerate(entries) if not isinstance(e, ToolResultEntry))
    while tail_start > 0 and isinstance(entries[tail_start - 1], ToolCallEntry):
        tail_start -= 1
    tail = view.entries[-(len(entries) - tail_start) :]
    for shown, original in zip(tail, entries[tail_start:], strict=True):
        if shown != original:  # only after a refusal: a result too big alone is previewed
            assert attempt and isinstance(shown, ToolResultEntry)
            assert isinstance(original, ToolResultEntry) and shown.call_id == original.call_id
            assert original.output.startswith(shown.output.split("\n[... ")[0])
            assert 'recall_tool_result("' in shown.output
    assert [e.model_dump() for e in entries] == frozen
    state = json.loads(json.dumps(view.state))

    again = asyncio.run(policy.prepare(ContextRequest(entries, state, provider)))
    assert again.entries == view.entries
    assert again.compacted is None
    fresh = Compaction(context_window=window, reserve_output_tokens=500, summarizer=summarizer)
    from_state = asyncio.run(fresh.prepare(ContextRequest(list(entries), state, provider)))
    assert from_state.entries == view.entries


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(turn, min_size=2, max_size=30),
    st.lists(turn, min_size=1, max_size=3),
    st.integers(1_500, 20_000),
)
def test_a_view_without_new_decisions_extends_the_previous_view_exactly(
    turns: list[tuple[str, Any]], more: list[tuple[str, Any]], window: int
) -> None:
    """Prefix stability: when the next call decides nothing new, its view begins with the
    previous view byte for byte (what provider prompt caches need)."""
    before = build(turns)
    after = build([*turns, *more])
    policy = Compaction(context_window=window, reserve_output_tokens=500, summarizer=summarizer)
    provider = ScriptedProvider()
    first = asyncio.run(policy.prepare(ContextRequest(before, {}, provider)))
    second = asyncio.run(policy.prepare(ContextRequest(after, first.state, provider)))
    if second.compacted is None:
        old = to_messages(first.entries)
        assert to_messages(second.entries)[: len(old) - 1] == old[:-1]
