"""Programs written the way lovia 0.9.119's documentation teaches run here unchanged.

Each test is a small user program through the public API; the LLM is scripted.
"""

from __future__ import annotations

import asyncio

import pytest

from lovia import Agent, GuardrailTripped, Runner
from lovia.testing import ScriptedProvider, text


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
