"""lovia.testing's scripted model behaves as lovia 0.9.119's, which users' tests assert on."""

from __future__ import annotations

import pytest

from lovia import Agent, Runner, tool
from lovia.events import ReasoningDelta, TextDelta
from lovia.messages import AssistantTurn, Message, ToolCall, Usage, system, tool_message, user
from lovia.testing import ScriptedProvider, batch, call, text


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_attributes_and_helpers() -> None:
    model = ScriptedProvider([text("hi")])
    assert (model.name, model.model, model.supports_json_schema) == ("scripted", None, False)
    assert call("add", {"a": 1, "b": 2}) == AssistantTurn(
        content=None,
        tool_calls=[ToolCall(id="call_add", name="add", arguments='{"a": 1, "b": 2}')],
        usage=Usage(1, 1),
    )
    assert [c.id for c in batch(("add", {}), ("add", {}), ("add", {}, "mine")).tool_calls] == [
        "call_0_add",
        "call_1_add",
        "mine",
    ]
    turn = text("hi", reasoning="why")
    assert (turn.content, turn.usage, turn.finish_reason) == ("hi", Usage(1, 1), None)


async def test_calls_hold_the_messages_of_each_prompt() -> None:
    model = ScriptedProvider([call("add", {"a": 2, "b": 3}), text("5")])
    agent = Agent("calc", instructions="Be terse.", model=model, tools=[add])

    result = await Runner.run(agent, "What is 2 + 3?")

    assert result.output == "5"
    assert model.calls == [
        [system("Be terse."), user("What is 2 + 3?")],
        [
            system("Be terse."),
            user("What is 2 + 3?"),
            Message(
                role="assistant",
                tool_calls=[ToolCall(id="call_add", name="add", arguments='{"a": 2, "b": 3}')],
            ),
            tool_message("call_add", "5"),
        ],
    ]
    assert model.calls[1][-1].content == "5"


async def test_text_and_reasoning_stream_one_character_per_delta_and_usage_is_one_each() -> None:
    model = ScriptedProvider([text("ok!", reasoning="hm")])
    handle = Runner.stream(Agent("a", model=model), "hi")
    events = [e async for e in handle]
    result = await handle.result()

    assert [e.delta for e in events if isinstance(e, ReasoningDelta)] == ["h", "m"]
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["o", "k", "!"]
    assert result.usage == Usage(1, 1) and result.finish_reason is None
    assert model.calls == [[user("hi")]]  # no instructions: no system message


async def test_any_assistant_turn_is_a_script_item_and_its_fields_are_reported() -> None:
    turn = AssistantTurn(content="done", usage=Usage(7, 3), finish_reason="stop")
    result = await Runner.run(Agent("a", model=ScriptedProvider([turn])), "hi")
    assert (result.output, result.usage, result.finish_reason) == ("done", Usage(7, 3), "stop")


async def test_a_dry_script_raises_the_0_9_119_assertion() -> None:
    model = ScriptedProvider([])
    with pytest.raises(AssertionError, match=r"^ScriptedProvider ran out of canned responses$"):
        await Runner.run(Agent("a", model=model), "hi")
    assert model.calls == [[user("hi")]]


async def test_a_callable_item_sees_the_messages() -> None:
    """Beyond 0.9.119 (the other tests here pass on it unchanged): a callable decides."""
    seen: list[list[Message]] = []

    def answer(messages: list[Message]) -> str:
        seen.append(messages)
        return f"you said {messages[-1].content}"

    result = await Runner.run(Agent("a", model=ScriptedProvider([answer])), "hello")
    assert result.output == "you said hello" and seen == [[user("hello")]]
