"""Two api.md statements that once failed: turns after a failed model call, and the system
message always first in ScriptedProvider.calls."""

from __future__ import annotations

import pytest

from lovia import Agent, CheckpointOptions, InMemoryCheckpointer, InputEntry, LoviaError, Runner
from lovia.messages import Message
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


async def test_scripted_calls_start_with_the_system_message_even_without_instructions() -> None:
    """api.md Testing + Behaviour details: calls[i]'s first message is the system message.

    Read strictly: "the first is the system message" / "comes first and once" has no
    exception for the default instructions="" (RunContext.entries says "(if any)", which is
    about the live transcript, not about the prompt a provider receives).
    """
    m = ScriptedProvider([text("a")])
    await Runner.run(Agent("a", model=m), "hi")
    assert m.calls[0][0].role == "system"
    assert sum(x.role == "system" for x in m.calls[0]) == 1
    assert m.calls[0][1] == Message(role="user", content="hi")
