"""Two api.md statements that once failed: turns after a failed model call, and the system
message always first in ScriptedProvider.calls."""

from __future__ import annotations

import pytest

from lovia import Agent, CheckpointOptions, InMemoryCheckpointer, InputEntry, LoviaError, Runner
from lovia.messages import Message, system, user
from lovia.testing import ScriptedProvider, call, text

from .test_api_md import echo


async def test_turns_after_resuming_a_failed_model_call_count_only_turns_that_happened() -> None:
    """api.md Behaviour details: after a resume `turns` counts every turn (C10).

    Read as: a model call that raised produced no turn in the transcript, so the resumed run
    that answers in its place is that same turn (a crash at the same point gives 2, too).
    """
    cp = InMemoryCheckpointer()
    m1 = ScriptedProvider([call("echo", {"value": "1"}), RuntimeError("provider down")])
    with pytest.raises((RuntimeError, LoviaError)):
        await Runner.run(
            Agent("a", model=m1, tools=[echo]), "original", checkpoint=CheckpointOptions(cp, "r")
        )
    snap = await cp.load("r")
    assert snap is not None and snap.status == "failed"
    m2 = ScriptedProvider([text("finished")])
    r = await Runner.run(
        Agent("a", model=m2, tools=[echo]), "ignored", checkpoint=CheckpointOptions(cp, "r")
    )
    assert r.entries[0] == InputEntry(role="user", content="original")
    assert [e.type for e in r.entries] == ["input", "tool_call", "tool_result", "assistant_text"]
    assert r.turns == 2


async def test_scripted_calls_start_with_the_system_message_when_there_are_instructions() -> None:
    """api.md Testing + Behaviour details: the system message comes first and once; an agent
    without instructions sends none (as lovia 0.9.119: its users' tests index calls[i] so)."""
    m = ScriptedProvider([text("a")])
    await Runner.run(Agent("a", model=m), "hi")
    assert m.calls[0] == [Message(role="user", content="hi")]
    m = ScriptedProvider([text("a")])
    await Runner.run(Agent("a", instructions="be brief", model=m), "hi")
    assert m.calls[0] == [system("be brief"), user("hi")]
