"""Properties of the entry -> wire translation, over generated conversations."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lovia import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from lovia.providers.anthropic import to_anthropic_messages
from lovia.providers.openai import to_chat_messages
from lovia.testing import to_messages
from lovia.transcript import entries_to_messages

words = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)


@st.composite
def conversations(draw: st.DrawFn) -> list[TranscriptEntry]:
    """A system prompt, then user turns each followed by model turns with paired results."""
    out: list[TranscriptEntry] = [InputEntry(role="system", content="sys")]
    n = 0
    for _ in range(draw(st.integers(1, 4))):
        out.append(InputEntry(role="user", content=draw(words)))
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                out.append(
                    ReasoningEntry(
                        content=draw(words), provider="anthropic", metadata={"signature": "s"}
                    )
                )
            if draw(st.booleans()):
                out.append(AssistantTextEntry(content=draw(words)))
            ids = []
            for _ in range(draw(st.integers(1, 3))):
                n += 1
                ids.append(f"call_{n}")
                out.append(ToolCallEntry(call_id=f"call_{n}", name="t", arguments='{"x": 1}'))
            out.extend(ToolResultEntry(call_id=i, output=draw(words)) for i in ids)
        out.append(AssistantTextEntry(content=draw(words)))
    return out


@settings(max_examples=200, deadline=None)
@given(conversations())
def test_chat_messages_answer_every_call_right_after_its_assistant_message(
    entries: list[TranscriptEntry],
) -> None:
    messages = to_chat_messages(entries)

    assert messages[0] == {"role": "system", "content": "sys"}
    assert [m["role"] for m in messages].count("system") == 1
    open_ids: list[str] = []
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] == open_ids.pop(0)
            continue
        assert open_ids == [], "a message came between tool calls and their results"
        if m["role"] == "assistant":
            assert m.get("content") is not None or m.get("tool_calls")
            open_ids = [c["id"] for c in m.get("tool_calls", [])]
    calls = [e.call_id for e in entries if isinstance(e, ToolCallEntry)]
    sent = [c["id"] for m in messages for c in m.get("tool_calls", [])]
    assert sent == calls


@settings(max_examples=200, deadline=None)
@given(conversations())
def test_anthropic_messages_alternate_and_each_turns_results_share_one_user_message(
    entries: list[TranscriptEntry],
) -> None:
    system, messages = to_anthropic_messages(entries)

    assert system == "sys"
    roles = [m["role"] for m in messages]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    for before, after in itertools.pairwise(messages):
        used = [b["id"] for b in before["content"] if b["type"] == "tool_use"]
        if used:
            answered: list[Any] = [
                b["tool_use_id"] for b in after["content"] if b["type"] == "tool_result"
            ]
            assert answered == used
    thinking = sum(1 for m in messages for b in m["content"] if b["type"] == "thinking")
    assert thinking == sum(1 for e in entries if isinstance(e, ReasoningEntry))


def fresh(entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    """Equal entries that are new objects: a view no cache has seen."""
    return [e.model_copy() for e in entries]


@settings(max_examples=150, deadline=None)
@given(conversations(), st.data())
def test_a_view_rendered_from_earlier_views_equals_one_rendered_afresh(
    entries: list[TranscriptEntry], data: st.DataObject
) -> None:
    """Each entry is rendered once per conversation; what goes out must not depend on that.

    Views grow turn by turn (as in a run); now and then one entry in the middle is replaced,
    as a compaction marker replaces a tool result, and the instructions change, as after a
    handoff.
    """
    view: list[TranscriptEntry] = []
    for entry in entries:
        view.append(entry)
        if len(view) > 2 and data.draw(st.integers(0, 5)) == 0:
            i = data.draw(st.integers(1, len(view) - 1))
            old = view[i]
            if isinstance(old, ToolResultEntry):
                view[i] = old.model_copy(update={"output": "[cleared]"})
        if data.draw(st.integers(0, 9)) == 0:
            view[0] = InputEntry(role="system", content=data.draw(words))
        for reasoning in (False, True):
            got = to_chat_messages(view, send_reasoning=reasoning)
            assert got == to_chat_messages(fresh(view), send_reasoning=reasoning)
        assert to_anthropic_messages(view) == to_anthropic_messages(fresh(view))
        assert to_messages(view) == entries_to_messages(fresh(view))
