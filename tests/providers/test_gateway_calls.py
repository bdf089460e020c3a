"""Gateways that send whole tool calls in one chunk, without an ``index`` (or with a null
one): each call is its own, as 0.9.119 read them, not one call with the names glued."""

from __future__ import annotations

from lovia import Agent, OpenAIChatProvider, Runner, ToolCallEntry, ToolResultEntry

from .common import add, get_weather
from .server import ProtocolServer, Reply, openai_chunk, openai_text_stream, sse


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
