"""The OpenAI-compatible provider, driven through whole runs against a real HTTP server."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from lovia import (
    Agent,
    AssistantTextEntry,
    InputEntry,
    ModelSettings,
    OpenAIChatProvider,
    ReasoningEntry,
    Runner,
    ToolCallEntry,
    ToolResultEntry,
    Usage,
)
from lovia.events import ReasoningDelta, TextDelta

from .common import add, get_weather
from .server import ProtocolServer, Reply, openai_chunk, openai_text_stream, openai_usage, sse


def two_tool_calls() -> Reply:
    """Reasoning, text, then two parallel tool calls with their arguments in fragments."""
    return Reply(
        events=[
            openai_chunk({"role": "assistant", "content": None, "reasoning_content": "User"}),
            openai_chunk({"reasoning_content": " wants weather."}),
            openai_chunk({"content": "Let me"}),
            openai_chunk({"content": " check."}),
            openai_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_w",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": ""},
                        }
                    ]
                }
            ),
            openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"ci'}}]}),
            openai_chunk(
                {"tool_calls": [{"index": 0, "function": {"arguments": 'ty": "Paris"}'}}]}
            ),
            openai_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a": 2,'},
                        }
                    ]
                }
            ),
            openai_chunk({"tool_calls": [{"index": 1, "function": {"arguments": ' "b": 3}'}}]}),
            openai_chunk({}, finish="tool_calls"),
            openai_chunk(usage=openai_usage(50, 20, cached=30)),
            sse("[DONE]"),
        ]
    )


def agent(model: OpenAIChatProvider, **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [get_weather, add])
    return Agent("helper", instructions="You are terse.", model=model, **kwargs)


async def test_run_with_two_parallel_tool_calls_assembles_entries_from_fragments(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(two_tool_calls(), Reply(events=openai_text_stream("Sunny, and 5.", prompt=90)))

    result = await Runner.run(agent(openai_model), "Weather in Paris, and 2+3?")

    assert result.output == "Sunny, and 5."
    assert result.entries == [
        InputEntry(role="user", content="Weather in Paris, and 2+3?"),
        ReasoningEntry(content="User wants weather.", provider="openai-chat"),
        AssistantTextEntry(content="Let me check."),
        ToolCallEntry(call_id="call_w", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCallEntry(call_id="call_a", name="add", arguments='{"a": 2, "b": 3}'),
        ToolResultEntry(call_id="call_w", output="sunny in Paris", raw="sunny in Paris"),
        ToolResultEntry(call_id="call_a", output="5", raw=5),
        AssistantTextEntry(content="Sunny, and 5."),
    ]
    assert result.usage == Usage(input_tokens=140, output_tokens=25, cache_read_tokens=30)
    assert result.finish_reason == "stop"


async def test_second_request_pairs_tool_calls_with_results_after_the_system_prompt(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(two_tool_calls(), Reply(events=openai_text_stream("Sunny, and 5.")))

    await Runner.run(agent(openai_model), "Weather in Paris, and 2+3?")

    first, second = (r.body for r in server.requests)
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"
    assert first["model"] == "test-model"
    assert first["stream"] is True
    assert first["stream_options"] == {"include_usage": True}
    assert first["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris, and 2+3?"},
    ]
    names = [t["function"]["name"] for t in first["tools"]]
    assert names == ["get_weather", "add", "recall_tool_result"]
    assert first["tools"][1]["type"] == "function"
    assert first["tools"][1]["function"]["parameters"]["properties"].keys() == {"a", "b"}
    # Reasoning is not sent back by default; text and both calls share one assistant message.
    assert second["messages"][2:] == [
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_w",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_w", "content": "sunny in Paris"},
        {"role": "tool", "tool_call_id": "call_a", "content": "5"},
    ]
    assert [m["role"] for m in second["messages"]].count("system") == 1


async def test_send_reasoning_returns_it_as_reasoning_content(server: ProtocolServer) -> None:
    server.add(two_tool_calls(), Reply(events=openai_text_stream("ok")))
    async with OpenAIChatProvider(
        "deepseek-reasoner", base_url=server.url, api_key="k", send_reasoning=True
    ) as model:
        await Runner.run(agent(model), "go")

    assistant = server.requests[1].body["messages"][2]
    assert assistant["reasoning_content"] == "User wants weather."
    assert server.requests[0].path == "/chat/completions"


async def test_model_settings_reach_the_wire(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(Reply(events=openai_text_stream("hi")), Reply(events=openai_text_stream("hi")))
    settings = ModelSettings(
        temperature=0.2,
        max_tokens=300,
        top_p=0.9,
        tool_choice="required",
        parallel_tool_calls=False,
        extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}},
    )
    await Runner.run(agent(openai_model, settings=settings), "hi")
    await Runner.run(agent(openai_model, settings=ModelSettings(tool_choice="add")), "hi")

    body = server.requests[0].body
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 300
    assert body["top_p"] == 0.9
    assert body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is False
    assert body["top_k"] == 20
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    named = server.requests[1].body
    assert named["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert "temperature" not in named and "parallel_tool_calls" not in named


async def test_settings_about_tools_are_left_out_when_the_agent_has_none(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(Reply(events=openai_text_stream("hi")))
    settings = ModelSettings(tool_choice="auto", parallel_tool_calls=True)

    await Runner.run(agent(openai_model, tools=[], settings=settings), "hi")

    body = server.requests[0].body
    assert "tools" not in body
    assert "tool_choice" not in body and "parallel_tool_calls" not in body


class Forecast(BaseModel):
    city: str
    degrees: int


async def test_structured_output_sends_a_json_schema_response_format(
    server: ProtocolServer,
) -> None:
    server.add(Reply(events=openai_text_stream(json.dumps({"city": "Oslo", "degrees": -3}))))
    model = OpenAIChatProvider(
        "test-model", base_url=f"{server.url}/v1", api_key="k", supports_json_schema=True
    )

    async with model:
        result = await Runner.run(agent(model, tools=[], output_type=Forecast), "Oslo?")

    assert result.output == Forecast(city="Oslo", degrees=-3)
    fmt = server.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema"
    # as 0.9.119 sends it: no titles pydantic derives from names. No "strict": OpenAI refuses
    # a strict schema that leaves additionalProperties open, as pydantic's schemas do.
    assert fmt["json_schema"] == {
        "name": "output",
        "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "degrees": {"type": "integer"}},
            "required": ["city", "degrees"],
        },
    }


async def test_streamed_run_shows_reasoning_and_text_as_they_arrive(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(two_tool_calls(), Reply(events=openai_text_stream("Sunny, and 5.")))

    handle = Runner.stream(agent(openai_model), "go")
    events = [e async for e in handle]

    texts = [e.delta for e in events if isinstance(e, TextDelta)]
    thoughts = [e.delta for e in events if isinstance(e, ReasoningDelta)]
    assert texts[:2] == ["Let me", " check."]
    assert "".join(texts[2:]) == "Sunny, and 5."
    assert len(texts) > 3  # the final answer came in several pieces
    assert thoughts == ["User", " wants weather."]
    assert (await handle.result()).output == "Sunny, and 5."


async def test_a_server_that_omits_call_ids_still_pairs_results(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    """Some local servers send tool calls without ids; lovia makes stable ones."""
    server.add(
        Reply(
            events=[
                openai_chunk(
                    {"tool_calls": [{"index": 0, "function": {"name": "add", "arguments": ""}}]}
                ),
                openai_chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":1,"b":1}'}}]}
                ),
                openai_chunk({}, finish="tool_calls"),
                sse("[DONE]"),
            ]
        ),
        Reply(events=openai_text_stream("2")),
    )

    result = await Runner.run(agent(openai_model), "1+1")

    call = result.entries[1]
    assert isinstance(call, ToolCallEntry) and call.call_id
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": call.call_id, "content": "2"}
    assert result.usage == Usage(input_tokens=10, output_tokens=5)


async def test_max_tokens_goes_out_under_the_name_the_endpoint_reads(
    server: ProtocolServer,
) -> None:
    server.add(Reply(events=openai_text_stream("hi")), Reply(events=openai_text_stream("hi")))
    capped = ModelSettings(max_tokens=64)
    async with OpenAIChatProvider(
        "o-model", base_url=server.url, api_key="k", max_tokens_param="max_completion_tokens"
    ) as renamed:
        await Runner.run(agent(renamed, settings=capped), "hi")
    async with OpenAIChatProvider("local", base_url=server.url, api_key="k") as local:
        await Runner.run(agent(local, settings=capped), "hi")

    assert server.requests[0].body["max_completion_tokens"] == 64
    assert "max_tokens" not in server.requests[0].body
    assert server.requests[1].body["max_tokens"] == 64
    assert OpenAIChatProvider("gpt-x", api_key="k").max_tokens_param == "max_completion_tokens"


async def test_a_turn_of_calls_alone_is_sent_without_a_content_field(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    """Chat Completions takes ``content`` as optional beside ``tool_calls``; a null one is
    refused by some compatible servers, so it is left out (as 0.9.119 did)."""
    call = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
    }
    calls_only = Reply(
        events=[
            openai_chunk({"role": "assistant", "tool_calls": [call]}),
            openai_chunk({}, finish="tool_calls"),
            sse("[DONE]"),
        ]
    )
    server.add(calls_only, Reply(events=openai_text_stream("3")))

    result = await Runner.run(agent(openai_model), "1+2?")

    assert result.output == "3"
    assistant = server.requests[1].body["messages"][2]
    assert assistant == {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
            }
        ],
    }
