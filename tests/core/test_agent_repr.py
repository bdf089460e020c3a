"""``repr(Agent)`` shows the agent's shape (as 0.9.119 does) without its secrets or bulk."""

from __future__ import annotations

from pydantic import BaseModel

from lovia import Agent, tool
from lovia.providers import OpenAIChatProvider
from lovia.testing import ScriptedProvider


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return q


class Report(BaseModel):
    title: str


def test_repr_names_the_agents_parts_in_order() -> None:
    helper = Agent("helper", handoff_description="answers billing questions")
    agent = Agent(
        "support",
        instructions="Be brief.",
        model="openai:gpt-4o-mini",
        tools=[lookup],
        output_type=Report,
        handoffs=[helper],
    )
    assert repr(agent) == (
        "Agent(name='support', instructions='Be brief.', model='openai:gpt-4o-mini', "
        "tools=['lookup'], output_type=Report, handoffs=['helper'])"
    )
    assert repr(helper) == (
        "Agent(name='helper', instructions='', model=None, tools=[], output_type=str, "
        "handoffs=[], handoff_description='answers billing questions')"
    )


def test_repr_shows_callables_by_name_and_settings_only_when_set() -> None:
    def dynamic(ctx: object) -> str:
        return "hi"

    def ask(call: object, ctx: object) -> bool:
        return True

    text = repr(Agent("a", instructions=dynamic, model=ScriptedProvider([]), approval_handler=ask))
    assert text.startswith("Agent(name='a', instructions=<function ")
    assert "dynamic>" in text and "model=<ScriptedProvider>" in text
    assert text.endswith("approval_handler=<function " + ask.__qualname__ + ">)")


def test_repr_cuts_long_instructions_and_never_shows_a_key() -> None:
    secret = "sk-test-do-not-print-0123456789"
    provider = OpenAIChatProvider("gpt-4o", api_key=secret)
    text = repr(Agent("a", instructions="x" * 5000, model=provider))
    assert secret not in text
    assert "model=<OpenAIChatProvider model='gpt-4o'>" in text
    assert "... (5000 chars)" in text and len(text) < 300
