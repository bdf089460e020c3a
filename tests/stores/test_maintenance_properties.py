"""Properties of the pure trim and rewind planners (S8, S10), over generated sessions."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from lovia import (
    AssistantTextEntry,
    InputEntry,
    Segment,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from lovia.context import content_digest
from lovia.stores.maintenance import MaintenancePlan, rewind_plan, trim_plan
from lovia.transcript import dangling_tool_calls


@st.composite
def runs(draw: st.DrawFn) -> list[TranscriptEntry]:
    """One run: an input, then turns of text and tool calls; some calls never get a result."""
    entries: list[TranscriptEntry] = [InputEntry(role="user", content=draw(st.text(max_size=5)))]
    for _ in range(draw(st.integers(0, 3))):
        calls = [
            ToolCallEntry(call_id=draw(st.sampled_from(["a", "b", "c"])), name="t")
            for _ in range(draw(st.integers(0, 3)))
        ]
        if draw(st.booleans()):
            entries.append(AssistantTextEntry(content="thinking"))
        entries.extend(calls)
        answered = draw(st.lists(st.sampled_from(calls), unique_by=id)) if calls else []
        for c in answered:
            size = draw(st.integers(0, 60))
            entries.append(ToolResultEntry(call_id=c.call_id, output="o" * size))
    if draw(st.booleans()):
        entries.append(AssistantTextEntry(content="done"))
    return entries


@st.composite
def sessions(draw: st.DrawFn) -> list[Segment]:
    bodies = draw(st.lists(runs(), max_size=5))
    return [
        Segment(f"r{i}", body, {"context_state": {"i": i}} if i % 2 else None)
        for i, body in enumerate(bodies)
    ]


def apply(segments: Sequence[Segment], plan: MaintenancePlan) -> list[Segment]:
    """What a store does with a plan: replace by run_id, delete by run_id, keep the order."""
    new = {s.run_id: s for s in plan.replace}
    return [new.get(s.run_id, s) for s in segments if s.run_id not in plan.delete]


def flat(segments: Sequence[Segment]) -> list[TranscriptEntry]:
    return [e for s in segments for e in s.entries]


def results_without_a_call(entries: Sequence[TranscriptEntry]) -> int:
    """Results no earlier open call with the same call_id explains."""
    open_calls: dict[str, int] = {}
    orphans = 0
    for e in entries:
        if isinstance(e, ToolCallEntry):
            open_calls[e.call_id] = open_calls.get(e.call_id, 0) + 1
        elif isinstance(e, ToolResultEntry):
            if open_calls.get(e.call_id):
                open_calls[e.call_id] -= 1
            else:
                orphans += 1
    return orphans


def dangling_ids(entries: Sequence[TranscriptEntry]) -> list[int]:
    return [id(c) for c in dangling_tool_calls(entries)]


@settings(max_examples=300, deadline=None)
@given(sessions(), st.integers(0, 60))
def test_rewind_keeps_every_result_with_its_call(segments: list[Segment], keep: int) -> None:
    """S10: after a rewind every result has its call before it, and no call loses its result."""
    plan = rewind_plan(segments, keep_entries=keep)
    before = flat(segments)
    after = flat(apply(segments, plan))
    assert results_without_a_call(after) == results_without_a_call(before) == 0
    # a kept call has its result, unless it was already dangling before the rewind
    assert set(dangling_ids(after)) <= set(dangling_ids(before))


@settings(max_examples=300, deadline=None)
@given(sessions(), st.integers(0, 60))
def test_rewind_leaves_at_most_n_entries_and_counts_the_rest(
    segments: list[Segment], keep: int
) -> None:
    """S10: rewind(N) leaves at most N entries, returns how many it removed, keeps the prefix."""
    plan = rewind_plan(segments, keep_entries=keep)
    before = flat(segments)
    after_segments = apply(segments, plan)
    after = flat(after_segments)
    assert len(after) <= keep
    assert plan.count == len(before) - len(after)
    if keep >= len(before):
        assert plan.empty and after_segments == segments
    else:
        # what stays is the head of the old view, minus only calls whose results were cut
        head = before[:keep]
        assert all(isinstance(e, ToolCallEntry) for e in head if e not in after)
        assert len(head) - len(after) == sum(1 for e in head if isinstance(e, ToolCallEntry)) - sum(
            1 for e in after if isinstance(e, ToolCallEntry)
        )
    changed = {s.run_id for s in plan.replace}
    for seg in after_segments:
        if seg.run_id in changed:
            assert seg.meta is None and seg.entries  # a truncated run loses its meta
    assert all(s.entries for s in plan.replace)


@settings(max_examples=200, deadline=None)
@given(sessions())
def test_rewind_to_zero_deletes_every_run(segments: list[Segment]) -> None:
    plan = rewind_plan(segments, keep_entries=0)
    assert apply(segments, plan) == [] or not flat(segments)


@settings(max_examples=300, deadline=None)
@given(sessions(), st.integers(0, 40), st.integers(0, 6))
def test_trim_twice_is_trim_once(segments: list[Segment], keep_chars: int, keep_runs: int) -> None:
    """S8: trimming again with the same arguments plans nothing."""
    once = apply(segments, trim_plan(segments, keep_chars=keep_chars, keep_runs=keep_runs))
    again = trim_plan(once, keep_chars=keep_chars, keep_runs=keep_runs)
    assert again.empty and again.count == 0


@settings(max_examples=300, deadline=None)
@given(sessions(), st.integers(0, 40), st.integers(0, 6))
def test_trim_keeps_structure_pairing_and_meta(
    segments: list[Segment], keep_chars: int, keep_runs: int
) -> None:
    """S8: only outputs change; order, types, call_ids, meta and the last runs stay as they were."""
    plan = trim_plan(segments, keep_chars=keep_chars, keep_runs=keep_runs)
    after = apply(segments, plan)
    assert [(s.run_id, s.meta) for s in after] == [(s.run_id, s.meta) for s in segments]
    old, new = flat(segments), flat(after)
    assert [(type(e), getattr(e, "call_id", None)) for e in new] == [
        (type(e), getattr(e, "call_id", None)) for e in old
    ]
    assert len(dangling_tool_calls(new)) == len(dangling_tool_calls(old))
    untouched = len(segments) - max(len(segments) - keep_runs, 0)
    assert after[len(after) - untouched :] == segments[len(segments) - untouched :]
    trimmed = 0
    for o, n in zip(old, new, strict=True):
        if isinstance(o, ToolResultEntry) and isinstance(n, ToolResultEntry) and o != n:
            trimmed += 1
            assert n.output.startswith(o.output[:keep_chars])
            marker = n.output[keep_chars:]
            assert marker.startswith(
                f"\n[lovia: trimmed {len(o.output) - keep_chars} of {len(o.output)} characters; "
                f'recall_tool_result("{content_digest(o.output)}")'
            )
            assert len(n.output) < len(o.output)  # a trim never makes an output longer
    assert trimmed == plan.count
