"""The context-policy surface 0.9.119 programs use: compact(CompactionRequest) policies,
ContextResult, the budget rule, the result stores' keys and bounds, safe_window."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from lovia import Agent, InMemorySession, Runner
from lovia.context import (
    Compaction,
    CompactionRequest,
    ContextResult,
    FileResultStore,
    InMemoryResultStore,
    NoopContextPolicy,
    ResultStore,
    Summarizer,
    TokenBudget,
)
from lovia.context.tokens import usable_tokens
from lovia.messages import Usage
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry, safe_window

from .support import fetch_tool


class KeepLastTwo:
    """A user's policy in 0.9.119's shape: only compact(), state in scratch, its own spend."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def compact(self, req: CompactionRequest) -> ContextResult:
        self.seen.append(req.scratch.get("calls", 0))
        req.scratch["calls"] = req.scratch.get("calls", 0) + 1
        req.usage.add(Usage(input_tokens=7, output_tokens=3))
        kept = safe_window(req.entries, head=1, tail=2)
        return ContextResult(entries=kept, changed=True, compacted=True, reason="keep_two")


async def test_a_compact_only_policy_shapes_each_view_and_keeps_its_scratch() -> None:
    model = ScriptedProvider([call("fetch", {"n": 1}), call("fetch", {"n": 2}), text("done")])
    policy = KeepLastTwo()
    agent = Agent(name="a", model=model, tools=[fetch_tool(50)], context_policy=policy)
    handle = Runner.stream(agent, "read")
    events = [e async for e in handle]
    result = await handle.result()
    assert result.output == "done"
    assert policy.seen == [0, 1, 2]  # the scratch came back on every call
    assert [len(v) for v in model.calls] == [1, 3, 3]  # the user message, then two more
    assert [m.role for m in model.calls[2]] == ["user", "assistant", "tool"]
    compacted = [e for e in events if e.type == "context_compacted"]
    assert len(compacted) == 3 and compacted[0].reason == "keep_two"
    # the policy's own spend is counted in the run's usage
    spent = ScriptedProvider([call("fetch", {"n": 1}), call("fetch", {"n": 2}), text("done")])
    plain = await Runner.run(
        Agent(name="a", model=spent, tools=[fetch_tool(50)], context_policy=NoopContextPolicy()),
        "read",
    )
    assert result.usage.input_tokens == plain.usage.input_tokens + 3 * 7
    assert result.usage.output_tokens == plain.usage.output_tokens + 3 * 3


async def test_compaction_answers_compact_with_its_view_and_state_in_scratch() -> None:
    outputs = [ToolResultEntry(call_id=f"c{i}", output=f"{i}" * 3_000) for i in range(8)]
    entries: list = [InputEntry(role="user", content="go")]
    for i, out in enumerate(outputs):
        entries += [ToolCallEntry(call_id=f"c{i}", name="fetch", arguments="{}"), out]
    policy = Compaction(context_window=6_000, reserve_output_tokens=1_000)
    req = CompactionRequest(entries=list(entries), provider=ScriptedProvider([]))
    first = await policy.compact(req)
    assert first.compacted and first.changed and req.scratch
    assert first.tokens_before is not None and first.tokens_after is not None
    assert first.tokens_after < first.tokens_before
    assert entries == req.entries  # the transcript is untouched
    again = await policy.compact(CompactionRequest(entries, scratch=req.scratch))
    assert not again.compacted and again.changed and again.entries == first.entries
    small = await NoopContextPolicy().compact(CompactionRequest(entries))
    assert small.entries is entries and not small.changed


class Notes(Summarizer):
    """A summarizer written as 0.9.119 taught: a subclass of its ``Summarizer`` protocol."""

    def __init__(self) -> None:
        self.spans: list[int] = []

    async def summarize(
        self, entries: list[Any], *, req: CompactionRequest, prior_summary: str | None = None
    ) -> str:
        self.spans.append(len(entries))
        return "they talked about the weather"


async def test_a_summarizer_subclassing_the_protocol_writes_the_summary() -> None:
    notes = Notes()
    policy = Compaction(context_window=2_000, reserve_output_tokens=200, summarizer=notes)
    assert policy.name == "compaction" and NoopContextPolicy().name == "noop"
    model = ScriptedProvider([text("reply " * 60) for _ in range(12)])
    agent = Agent(name="chat", model=model, context_policy=policy)
    session = InMemorySession()
    for i in range(12):
        await Runner.run(agent, f"question {i}: " + "words " * 60, session=session, session_id="s")
    assert notes.spans
    assert "talked about the weather" in str([m.content for m in model.calls[-1]])


def test_budget_marks_are_fractions_or_token_counts() -> None:
    assert TokenBudget(window=200_000, reserve_output=0, trigger=150_000).trigger_tokens == 150_000
    mixed = TokenBudget(window=10_000, reserve_output=0, trigger=0.9, target=20_000)
    assert (mixed.trigger_tokens, mixed.target_tokens) == (9_000, 8_999)
    assert usable_tokens(4_096, 4_096) == 2_048 and usable_tokens(1, 10) == 1
    for bad in ({"window": 0}, {"trigger": True}, {"trigger": 0.5, "target": 0.6}):
        with pytest.raises(ValueError) as info:
            TokenBudget(**{"window": 1_000, **bad})  # type: ignore[arg-type]
        assert info.value.hint  # type: ignore[attr-defined]
    # a small local model under the default reserve: half the window, not an error
    assert Compaction(context_window=4_000).context_window == 4_000
    assert Compaction(compact_at=150_000, compact_to=100_000).compact_at == 150_000


def test_the_result_stores_import_from_0_9_119s_module_path() -> None:
    from lovia.context import store

    assert (store.ResultStore, store.InMemoryResultStore, store.FileResultStore) == (
        ResultStore,
        InMemoryResultStore,
        FileResultStore,
    )


async def test_in_memory_store_bounds() -> None:
    store = InMemoryResultStore(max_entries=2)
    for key in ("a", "b"):
        await store.put(key, key.upper())
    assert await store.get("a") == "A"  # now the most recent
    await store.put("c", "C")
    assert [await store.get(k) for k in "abc"] == ["A", None, "C"]
    endless = InMemoryResultStore(max_entries=None)
    for i in range(3_000):
        await endless.put(f"k{i}", "v")
    assert len(endless) == 3_000
    with pytest.raises(ValueError, match="max_entries"):
        InMemoryResultStore(max_entries=0)


async def test_file_store_overwrites_atomically_and_reads_0_9_119_files(tmp_path: Path) -> None:
    store = FileResultStore(tmp_path)
    await store.put("k", "first")
    await store.put("k", "second, longer")
    assert await store.get("k") == "second, longer"
    assert len(os.listdir(tmp_path)) == 1
    # a directory 0.9.119 filled: its file name is the quoted key and a sha1 suffix
    key = "call/7 ü"
    name = f"{quote(key, safe='')[:80]}-{hashlib.sha1(key.encode()).hexdigest()[:16]}.txt"
    (tmp_path / name).write_text("archived by 0.9.119", encoding="utf-8")
    assert await store.get(key) == "archived by 0.9.119"
    (tmp_path / "blocked.txt").mkdir()
    with pytest.raises(OSError):
        await store.put("blocked", "x")
    assert [n for n in os.listdir(tmp_path) if not n.endswith(".txt")] == []  # no temp files


def test_safe_window_keeps_tool_pairs_whole() -> None:
    def user(s: str) -> InputEntry:
        return InputEntry(role="user", content=s)

    def pair(cid: str) -> list:
        return [ToolCallEntry(call_id=cid, name="f"), ToolResultEntry(call_id=cid, output=cid)]

    # Call(B), Call(A), Result(B), Result(A): a tail of one grows back to both calls
    calls = [ToolCallEntry(call_id=c, name="f") for c in "BA"]
    results = [ToolResultEntry(call_id=c, output=c) for c in "BA"]
    entries = [user("u0"), user("u1"), *calls, *results]
    assert safe_window(entries, tail=1) == [*calls, *results]
    assert safe_window(entries, head=1, tail=1) == [entries[0], *calls, *results]
    orphan = [user("u0"), user("u1"), ToolResultEntry(call_id="gone", output="x"), user("u2")]
    assert safe_window(orphan, tail=2) == [orphan[3]]
    assert safe_window([user("a"), *pair("x")], head=-3, tail=0) == []
    assert safe_window([user("a"), *pair("x")], head=1, tail=1) == [user("a"), *pair("x")]


async def test_a_view_without_the_system_entry_gets_it_back() -> None:
    """A policy that drops the instructions still sends them: the run's rendered system
    entry opens every view, the same text on every call."""

    class DropSystem:
        async def compact(self, req: CompactionRequest) -> ContextResult:
            body = [e for e in req.entries if getattr(e, "role", None) != "system"]
            return ContextResult(entries=body, changed=True)

    model = ScriptedProvider([call("fetch", {"n": 1}), text("done")])
    turns: list[int] = []
    agent = Agent(name="a", instructions="BASE", model=model, tools=[fetch_tool(10)])

    @agent.instruction
    def stamp(ctx) -> str:  # type: ignore[no-untyped-def]
        turns.append(ctx.turn)
        return f"turn {ctx.turn}"

    await Runner.run(agent, "go", context_policy=DropSystem())
    assert [m[0].role for m in model.calls] == ["system", "system"]
    assert model.calls[0][0].content == model.calls[1][0].content
    assert "BASE" in model.calls[1][0].content and "turn 0" in model.calls[1][0].content


async def test_images_cost_a_flat_estimate_and_leave_with_their_result() -> None:
    from lovia.context import TokenCounter
    from lovia.parts import ImagePart, TextPart

    shot = ImagePart(data="A" * 400_000, mime_type="image/png")
    counter = TokenCounter(image_tokens=1_000)
    asked = InputEntry(role="user", content=[TextPart(text="look"), shot])
    assert counter.count_entry(asked) == 1 + 1_000 + counter.entry_overhead
    # a screenshot per result: the old ones are cleared, and their images go with them
    entries: list = [InputEntry(role="user", content="shoot")]
    for i in range(6):
        entries += [
            ToolCallEntry(call_id=f"s{i}", name="screenshot"),
            ToolResultEntry(call_id=f"s{i}", output=f"[image {i}]", parts=[shot]),
        ]
    policy = Compaction(context_window=8_000, reserve_output_tokens=1_000, image_tokens=1_000)
    result = await policy.compact(CompactionRequest(entries, provider=ScriptedProvider([])))
    assert result.compacted
    kept = [e for e in result.entries if isinstance(e, ToolResultEntry) and e.parts]
    assert 0 < len(kept) < 6 and kept[-1].call_id == "s5"
    assert sum(counter.count_entry(e) for e in result.entries) < 8_000 - 1_000


async def test_recall_answers_the_references_0_9_119_gave() -> None:
    """A summary or marker from a 0.9.119 session names its digest (16 hex characters), and a
    store it filled holds outputs under such keys: recall_tool_result finds both."""
    output = "the full output " * 50
    old_digest = hashlib.sha1(output.encode()).hexdigest()[:16]
    history = [
        InputEntry(role="user", content="go"),
        ToolCallEntry(call_id="c1", name="fetch", arguments='{"n": 1}'),
        ToolResultEntry(call_id="c1", output=output),
    ]
    store = InMemoryResultStore()
    await store.put("3f0a5543b56c0ae4", "archived by 0.9.119")
    refs = [old_digest, "3f0a5543b56c0ae4", "0000000000000000"]
    model = ScriptedProvider(
        [call("recall_tool_result", {"ref": r}, call_id=f"r{i}") for i, r in enumerate(refs)]
        + [text("ok")]
    )
    agent = Agent(
        name="a", model=model, tools=[fetch_tool(10)], context_policy=Compaction(store=store)
    )
    result = await Runner.run(agent, history)
    answers = {e.call_id: e.output for e in result.entries if isinstance(e, ToolResultEntry)}
    assert answers["r0"] == output
    assert answers["r1"] == "archived by 0.9.119"
    assert "No tool result found" in answers["r2"]


async def test_an_overflow_the_policy_cannot_shrink_is_not_retried() -> None:
    """After a refusal the policy gets one more go; a view about as big as the refused one is
    not sent again (it would be refused and paid for), the overflow surfaces instead."""
    from lovia import ContextOverflowError

    from .support import RefusingProvider

    class SameAgain:
        async def compact(self, req: CompactionRequest) -> ContextResult:
            return ContextResult(entries=req.entries, changed=req.overflow, compacted=req.overflow)

    for policy in (SameAgain(), Compaction()):  # a short prompt: nothing to compact
        inner = ScriptedProvider([text("never")])
        model = RefusingProvider(inner, refusals=1)
        with pytest.raises(ContextOverflowError):
            await Runner.run(Agent(name="a", model=model, context_policy=policy), "hello")
        assert len(model.refused_sizes) == 1 and inner.calls == []
    # a view the policy did shrink is retried, and answers
    inner = ScriptedProvider([text("fine")])
    model = RefusingProvider(inner, refusals=1)
    long_input = [InputEntry(role="user", content="x" * 4_000), *([InputEntry(content="q")] * 3)]

    class TailOnOverflow:
        async def compact(self, req: CompactionRequest) -> ContextResult:
            view = safe_window(req.entries, tail=2) if req.overflow else req.entries
            return ContextResult(entries=view, changed=req.overflow, compacted=req.overflow)

    agent = Agent(name="a", model=model, context_policy=TailOnOverflow())
    result = await Runner.run(agent, long_input)
    assert result.output == "fine" and len(inner.calls) == 1


async def test_after_an_overflow_a_policy_that_states_its_sizes_is_taken_at_its_word() -> None:
    """A compact() policy that gives ``tokens_after`` for the refused view and for the new one
    is believed, as 0.9.119 believed it: its own count may see what the estimate cannot (its
    server's tokenizer, images), so a view it says is much smaller is sent, and one it says
    is about as big is not. Before, its numbers were ignored and the views measured."""
    from lovia import ContextOverflowError

    from .support import RefusingProvider

    class OwnCount:
        def __init__(self, retried_size: int) -> None:
            self.retried_size = retried_size
            self.seen: list[tuple[bool, int | None]] = []

        async def compact(self, req: CompactionRequest) -> ContextResult:
            self.seen.append((req.overflow, req.last_input_tokens))
            size = self.retried_size if req.overflow else 1_000
            return ContextResult(
                entries=list(req.entries),
                changed=req.overflow,
                compacted=req.overflow,
                tokens_after=size,
            )

    inner = ScriptedProvider([text("fits now")])
    model = RefusingProvider(inner, refusals=1)
    policy = OwnCount(retried_size=400)
    result = await Runner.run(Agent(name="a", model=model, context_policy=policy), "hello")
    assert result.output == "fits now"
    assert policy.seen == [(False, None), (True, None)]
    assert len(model.refused_sizes) == 1 and len(inner.calls) == 1

    inner = ScriptedProvider([text("never")])
    model = RefusingProvider(inner, refusals=1)
    policy = OwnCount(retried_size=990)  # not clearly smaller, by its own count
    with pytest.raises(ContextOverflowError):
        await Runner.run(Agent(name="a", model=model, context_policy=policy), "hello")
    assert len(model.refused_sizes) == 1 and inner.calls == []


async def test_a_policy_that_says_unchanged_gets_the_transcript_whatever_it_did_to_its_copy() -> (
    None
):
    class Vandal:
        async def compact(self, req: CompactionRequest) -> ContextResult:
            req.entries.clear()  # breaks the contract: the run must not care
            return ContextResult(entries=req.entries, changed=False)

    model = ScriptedProvider([text("intact")])
    result = await Runner.run(Agent("a", model=model), "hello", context_policy=Vandal())

    assert result.output == "intact"
    assert [(m.role, m.content) for m in model.calls[0]] == [("user", "hello")]
    assert [e.type for e in result.entries] == ["input", "assistant_text"]
