"""A provider written for lovia 0.9.119 gets the tools in the shape 0.9.119 handed it.

0.9.119 passes ``stream(tools=...)`` as OpenAI function specs
(``{"type": "function", "function": {"name", "description", "parameters"}}``) and documents
the provider protocol without saying more, so providers written against it read
``spec["function"]["name"]`` or forward the list to an OpenAI-compatible API as it is. A flat
``{"name", ...}`` spec broke both (``KeyError: 'type'`` on the first model call). The
parameters' JSON is also the bytes 0.9.119 sent (``additionalProperties`` last), so a snapshot
of a request, or a cached prompt prefix, stays the same across the upgrade.
"""

from __future__ import annotations

import json
from typing import Any

from lovia import Agent, Runner, tool
from lovia.testing import ScriptedProvider, text
from lovia.transcript import FinishDelta, TextDelta


@tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


@tool
def ping() -> str:
    """Ping."""
    return "pong"


# What 0.9.119 prints for json.dumps(add.parameters) and json.dumps(ping.parameters).
ADD_0_9_119 = (
    '{"properties": {"a": {"type": "integer"}, "b": {"default": 2, "type": "integer"}},'
    ' "required": ["a"], "type": "object", "additionalProperties": false}'
)
PING_0_9_119 = '{"type": "object", "properties": {}, "additionalProperties": false}'


class ForwardingProvider:
    """A 0.9.119-era provider: checks each spec's type and forwards the list as JSON."""

    name = "forwarding"
    model = "m"
    supports_json_schema = False

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.names: list[list[str]] = []

    async def stream(
        self, entries: Any, *, tools: Any = None, response_format: Any = None, settings: Any = None
    ) -> Any:
        specs = list(tools or [])
        self.names.append([t["function"]["name"] for t in specs if t["type"] == "function"])
        self.sent.append(json.dumps(specs))
        yield TextDelta(text="ok")
        yield FinishDelta(reason="stop")


async def test_a_0_9_119_provider_reads_the_tools_in_openai_function_shape() -> None:
    provider = ForwardingProvider()
    result = await Runner.run(Agent(name="a", model=provider, tools=[add, ping]), "hi")
    assert result.output == "ok"
    assert provider.names[0][:2] == ["add", "ping"]
    sent = json.loads(provider.sent[0])
    assert sent[0] == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": json.loads(ADD_0_9_119),
        },
    }
    # The forwarded JSON is the 0.9.119 bytes: no extra keys, parameters in its order.
    assert json.dumps(sent[0]["function"]["parameters"]) == ADD_0_9_119
    assert json.dumps(sent[1]["function"]["parameters"]) == PING_0_9_119


def test_tool_parameters_serialise_as_in_0_9_119() -> None:
    assert json.dumps(add.parameters) == ADD_0_9_119
    assert json.dumps(ping.parameters) == PING_0_9_119


async def test_scripted_provider_tools_keep_reading_by_name() -> None:
    model = ScriptedProvider([text("done")])
    await Agent(name="a", model=model, tools=[add]).run("hi")
    spec = model.tools[0][0]
    assert spec["type"] == "function" and spec["function"]["name"] == "add"
    assert spec["name"] == "add" and spec["parameters"] == add.parameters
