"""Entries and runs the session checks store."""

from __future__ import annotations

from typing import Any

from ...stores.session_protocol import Segment
from ...transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

__all__ = ["ids", "say", "three_runs", "tool_run", "user"]


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def say(text: str) -> AssistantTextEntry:
    return AssistantTextEntry(content=text)


def tool_run(n: int, output: str = "ok") -> list[TranscriptEntry]:
    """One run as the runner stores it: input, a call, its result, the final text."""
    return [
        user(f"question {n}"),
        ToolCallEntry(call_id=f"c{n}", name="lookup", arguments='{"q": 1}'),
        ToolResultEntry(call_id=f"c{n}", output=output),
        say(f"answer {n}"),
    ]


async def three_runs(store: Any, sid: str = "s") -> list[TranscriptEntry]:
    """Runs A (4 entries, with a tool), B (4, with a tool), C (2): 10 entries in all."""
    await store.append(sid, tool_run(1), run_id="A", meta={"context_state": {"a": 1}})
    await store.append(sid, tool_run(2), run_id="B", meta={"context_state": {"b": 2}})
    await store.append(sid, [user("thanks"), say("welcome")], run_id="C", meta={"c": 3})
    loaded: list[TranscriptEntry] = await store.load(sid)
    return loaded


def ids(segments: list[Segment]) -> list[str]:
    return [s.run_id for s in segments]
