"""Tool call arguments a provider would refuse are sent back as a JSON object.

A stream cut off mid-call, or a model sending an array, leaves arguments that are not a JSON
object. The tool is not run (the model is told), the stored entry keeps what the model sent,
and the next request re-sends the call wrapped as ``{"_raw": ...}`` so the provider accepts
the history. Both wire protocols, against a real HTTP server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lovia import Agent, Provider, Runner, ToolCallEntry, ToolResultEntry, tool
from lovia.messages import AssistantTurn, ToolCall, Usage
from lovia.testing import ScriptedProvider, text

from .dialects import Dialect
from .server import ProtocolServer


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def resent_arguments(dialect: Dialect, body: dict[str, Any]) -> Any:
    """The re-sent call's arguments as the wire carries them."""
    if dialect.name == "openai":
        (msg,) = [m for m in body["messages"] if m.get("tool_calls")]
        return json.loads(msg["tool_calls"][0]["function"]["arguments"])
    (block,) = [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    return block["input"]


@pytest.mark.parametrize(
    ("name", "sent"),
    [("add", '{"a": 1, "b": '), ("ghost", "[1, 2]"), ("add", '"just text"')],
    ids=["cut-off", "array", "string"],
)
async def test_unusable_arguments_are_resent_wrapped_and_stored_verbatim(
    dialect: Dialect, server: ProtocolServer, model: Provider, name: str, sent: str
) -> None:
    server.add(dialect.tool_call("c1", name, sent), dialect.text("sorry"))

    result = await Runner.run(Agent("a", model=model, tools=[add]), "add 1 and 2")

    assert result.output == "sorry"
    stored = next(e for e in result.entries if isinstance(e, ToolCallEntry))
    assert stored.arguments == sent
    told = next(e for e in result.entries if isinstance(e, ToolResultEntry))
    assert told.is_error
    assert resent_arguments(dialect, server.requests[1].body) == {"_raw": sent}


async def test_good_arguments_are_resent_as_the_model_sent_them(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    server.add(dialect.tool_call("c1", "add", '{"a": 1, "b": 2}'), dialect.text("3"))

    await Runner.run(Agent("a", model=model, tools=[add]), "add 1 and 2")

    assert resent_arguments(dialect, server.requests[1].body) == {"a": 1, "b": 2}


async def test_the_scripted_model_sees_the_same_view() -> None:
    broken = AssistantTurn(
        content=None,
        tool_calls=[ToolCall(id="c1", name="add", arguments='{"a": 1')],
        usage=Usage(input_tokens=1, output_tokens=1),
    )
    model = ScriptedProvider([broken, text("ok")])

    await Runner.run(Agent("a", model=model, tools=[add]), "go")

    (assistant,) = [m for m in model.calls[1] if m.role == "assistant" and m.tool_calls]
    assert json.loads(assistant.tool_calls[0].arguments) == {"_raw": '{"a": 1'}
