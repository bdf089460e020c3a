"""Surfaces users' test suites assert on, as lovia 0.9.119 has them (issue 12): what
``ScriptedProvider.stream`` yields, how a turn is assembled from it, the cancel reason, the
transcript a context shows and the error for an unknown entry type."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from lovia import (
    Agent,
    AssistantTextEntry,
    CancelToken,
    ReasoningEntry,
    RunCancelled,
    RunContext,
    Runner,
    ToolCallEntry,
    tool,
)
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import (
    EntryCompletedDelta,
    FinishDelta,
    InputEntry,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    TranscriptEntry,
    UsageDelta,
    entry_from_dict,
)


async def deltas(provider: ScriptedProvider) -> list[Any]:
    return [d async for d in provider.stream([InputEntry(role="user", content="q")])]


async def test_a_scripted_text_streams_as_fragments_usage_and_finish() -> None:
    got = await deltas(ScriptedProvider([text("ab")]))
    assert [type(d) for d in got] == [TextDelta, TextDelta, UsageDelta, FinishDelta]
    assert [d.text for d in got[:2]] == ["a", "b"]


async def test_scripted_reasoning_comes_whole_and_calls_as_fragments() -> None:
    got = await deltas(ScriptedProvider([text("ok", reasoning="hm")]))
    kinds = [type(d) for d in got]
    assert kinds[:3] == [ReasoningDelta, ReasoningDelta, EntryCompletedDelta]
    assert EntryCompletedDelta not in kinds[3:]
    got = await deltas(ScriptedProvider([call("f", {"a": 1}, call_id="c1")]))
    assert [type(d) for d in got] == [ToolCallDelta, UsageDelta, FinishDelta]


class MixedProvider:
    """Sends reasoning whole but text and calls only as fragments (as some providers do)."""

    name = "mixed"
    model = None

    async def stream(self, entries: Sequence[Any], **_: Any) -> AsyncIterator[Any]:
        yield ReasoningDelta("thinking")
        yield EntryCompletedDelta(ReasoningEntry(content="thinking", provider="mixed"))
        yield TextDelta("hel")
        yield TextDelta("lo")
        if not any(getattr(e, "type", "") == "tool_result" for e in entries):
            yield ToolCallDelta(0, "c1", "echo", '{"x": ')
            yield ToolCallDelta(0, None, None, "1}")
        yield FinishDelta("stop")


async def test_a_turn_joins_the_kinds_a_provider_sent_only_as_fragments() -> None:
    @tool
    def echo(x: int) -> str:
        """Echo."""
        return str(x)

    r = await Runner.run(Agent("bot", model=MixedProvider(), tools=[echo]), "q")  # type: ignore[arg-type]
    first = r.entries[1:4]
    assert [type(e) for e in first] == [ReasoningEntry, AssistantTextEntry, ToolCallEntry]
    assert first[0].content == "thinking" and first[1].content == "hello"
    assert isinstance(first[2], ToolCallEntry) and first[2].arguments == '{"x": 1}'
    assert r.output == "hello"


def test_a_cancel_token_raises_with_its_reason() -> None:
    token = CancelToken()
    token.check()
    token.cancel("user clicked stop")
    with pytest.raises(RunCancelled) as caught:
        token.check()
    assert str(caught.value).splitlines()[0] == "user clicked stop"


async def test_a_context_shows_the_transcript_as_a_list_it_cannot_change() -> None:
    seen: list[Any] = []

    @tool
    def peek(ctx: RunContext[Any]) -> str:
        """Look at the transcript."""
        seen.append(ctx.entries)
        return "ok"

    await Runner.run(
        Agent("bot", model=ScriptedProvider([call("peek", {}), text("done")]), tools=[peek]), "q"
    )
    (entries,) = seen
    assert entries == list(entries) and [e.type for e in entries] == ["input", "tool_call"]
    with pytest.raises(TypeError):
        entries.append(entries[0])
    with pytest.raises(TypeError):
        entries[0] = entries[1]


def test_an_unknown_entry_type_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match="Unknown entry type: 'nope'"):
        entry_from_dict({"type": "nope"})


def test_an_entry_is_an_instance_of_the_union_and_the_union_still_discriminates() -> None:
    """0.9.119's TranscriptEntry was a plain union, so ``isinstance(x, TranscriptEntry)``
    sorted entries from other values; pydantic still picks the model by ``type``."""
    from pydantic import TypeAdapter

    call_entry = ToolCallEntry(call_id="c", name="f")
    mixed: list[Any] = [InputEntry(role="user", content="q"), "note", call_entry]
    assert [x for x in mixed if isinstance(x, TranscriptEntry)] == [mixed[0], mixed[2]]
    assert issubclass(ToolCallEntry, TranscriptEntry) and not issubclass(str, TranscriptEntry)
    (entry,) = TypeAdapter(list[TranscriptEntry]).validate_python(
        [{"type": "tool_call", "call_id": "c", "name": "f"}]
    )
    assert entry == ToolCallEntry(call_id="c", name="f")
