"""Gateways that send whole tool calls instead of streaming them, read as 0.9.119 read them:
OpenAI-style calls without an ``index`` (or with a null one) are each their own call, not one
call with the names glued; an Anthropic-style ``tool_use`` block whose ``input`` comes whole in
``content_block_start`` keeps that input."""

from __future__ import annotations

import json

from lovia import (
    Agent,
    AnthropicProvider,
    OpenAIChatProvider,
    Runner,
    ToolCallEntry,
    ToolResultEntry,
)

from .common import add, get_weather
from .server import (
    ProtocolServer,
    Reply,
    anthropic_end,
    anthropic_event,
    anthropic_start,
    anthropic_text_stream,
    openai_chunk,
    openai_text_stream,
    sse,
)


async def test_whole_calls_without_an_index_are_separate_calls(server: ProtocolServer) -> None:
    calls = [
        {"id": "c1", "index": None, "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
        {"id": "c2", "function": {"name": "get_weather", "arguments": None}},
        {"function": {"arguments": '{"city": "Oslo"}'}},  # continues the latest call
    ]
    server.add(
        Reply(events=[openai_chunk({"tool_calls": calls}, finish="tool_calls"), sse("[DONE]")]),
        Reply(events=openai_text_stream("3, and sunny.")),
    )
    async with OpenAIChatProvider("m", base_url=f"{server.url}/v1", api_key="k") as model:
        result = await Runner.run(Agent("a", model=model, tools=[add, get_weather]), "go")
    assert [
        (e.call_id, e.name, e.arguments) for e in result.entries if isinstance(e, ToolCallEntry)
    ] == [("c1", "add", '{"a": 1, "b": 2}'), ("c2", "get_weather", '{"city": "Oslo"}')]
    outputs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outputs == ["3", "sunny in Oslo"]


async def test_an_anthropic_gateway_that_sends_the_whole_input_up_front(
    server: ProtocolServer,
) -> None:
    def block(index: int, content: dict[str, object]) -> list[str]:
        start = {"index": index, "content_block": content}
        return [
            anthropic_event("content_block_start", start),
            anthropic_event("content_block_stop", {"index": index}),
        ]

    whole = {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 2, "b": 5}}
    server.add(
        Reply(
            events=[
                anthropic_start(),
                *block(0, {"type": "thinking", "thinking": "sum it", "signature": "s"}),
                *block(1, whole),
                *anthropic_end("tool_use", 3),
            ]
        ),
        Reply(events=anthropic_text_stream("7")),
    )
    async with AnthropicProvider("claude-test", base_url=server.url, api_key="k") as model:
        result = await Runner.run(Agent("a", model=model, tools=[add]), "2+5?")
    [called] = [e for e in result.entries if isinstance(e, ToolCallEntry)]
    assert json.loads(called.arguments) == {"a": 2, "b": 5}
    assert [e.output for e in result.entries if isinstance(e, ToolResultEntry)] == ["7"]
    assert result.output == "7"
