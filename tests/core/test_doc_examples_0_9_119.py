"""Programs written the way lovia 0.9.119's documentation teaches run here unchanged.

Each test is a small user program through the public API; the LLM is scripted.
"""

from __future__ import annotations

import asyncio

import pytest

from lovia import Agent, GuardrailTripped, Runner, ToolResultEntry, Usage, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)


def test_guardrail_tripped_takes_message_by_keyword() -> None:
    err = GuardrailTripped(message="Email addresses are not allowed.")
    assert str(err) == "Email addresses are not allowed."
    assert err.reason == "Email addresses are not allowed."
    assert err.hint is None


def test_guardrail_raising_with_message_keyword_fails_the_run_with_it() -> None:
    async def no_email(messages: list[object], ctx: object) -> None:
        if any("@" in str(getattr(m, "content", "")) for m in messages):
            raise GuardrailTripped(message="no addresses here", hint="drop the address")

    agent = Agent(name="desk", model=ScriptedProvider([text("hi")]), input_guardrails=[no_email])
    with pytest.raises(GuardrailTripped) as caught:
        asyncio.run(Runner.run(agent, "write to me at someone@example.org"))
    assert caught.value.reason == "no addresses here"
    assert caught.value.hint == "drop the address"
    assert str(caught.value) == "no addresses here\n  hint: drop the address"


def test_tool_takes_its_function_by_keyword() -> None:
    def shout(words: str) -> str:
        """Say it louder."""
        return words.upper()

    made = tool(fn=shout, name="shout")
    agent = Agent(
        name="a",
        model=ScriptedProvider([call("shout", {"words": "hi"}), text("done")]),
        tools=[made],
    )
    result = Runner.run_sync(agent, "go")
    assert [e.output for e in result.entries if isinstance(e, ToolResultEntry)] == ["HI"]


def test_model_deltas_carry_their_type_and_finish_needs_no_reason() -> None:
    deltas = [
        TextDelta("a"),
        ReasoningDelta("b"),
        ToolCallDelta(0),
        UsageDelta(Usage()),
        FinishDelta(),
        EntryCompletedDelta(AssistantTextEntry(content="c")),
    ]
    assert [d.type for d in deltas] == [
        "text_delta",
        "reasoning_delta",
        "tool_call_delta",
        "usage_delta",
        "finish_delta",
        "entry_completed_delta",
    ]
    assert FinishDelta().reason is None
