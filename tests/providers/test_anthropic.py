"""The Anthropic provider, driven through whole runs against a real HTTP server."""

from __future__ import annotations

from typing import Any

from lovia import (
    Agent,
    AnthropicProvider,
    AssistantTextEntry,
    InputEntry,
    ModelSettings,
    ReasoningEntry,
    Runner,
    ToolCallEntry,
    ToolResultEntry,
    Usage,
)
from lovia.events import ReasoningDelta, TextDelta

from .common import add, get_weather
from .server import (
    ProtocolServer,
    Reply,
    anthropic_end,
    anthropic_event,
    anthropic_start,
    anthropic_text_block,
    anthropic_text_stream,
    anthropic_tool_block,
    anthropic_tool_stream,
)


def thinking_block(index: int, parts: list[str], signature: str) -> list[str]:
    return [
        anthropic_event(
            "content_block_start",
            {
                "index": index,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        *(
            anthropic_event(
                "content_block_delta",
                {"index": index, "delta": {"type": "thinking_delta", "thinking": p}},
            )
            for p in parts
        ),
        anthropic_event(
            "content_block_delta",
            {"index": index, "delta": {"type": "signature_delta", "signature": signature}},
        ),
        anthropic_event("content_block_stop", {"index": index}),
    ]


def think_talk_and_call_two_tools() -> Reply:
    return Reply(
        events=[
            anthropic_start(input_tokens=40, cache_read=100, cache_write=20),
            *thinking_block(0, ["User wants", " weather."], "sig-abc"),
            *anthropic_text_block(1, "Let me check."),
            *anthropic_tool_block(2, "toolu_w", "get_weather", ['{"ci', 'ty": "Paris"}']),
            *anthropic_tool_block(3, "toolu_a", "add", ['{"a": 2,', ' "b": 3}']),
            *anthropic_end("tool_use", 30),
        ]
    )


def agent(model: AnthropicProvider, **kwargs: Any) -> Agent:
    kwargs.setdefault("tools", [get_weather, add])
    return Agent("helper", instructions="You are terse.", model=model, **kwargs)


async def test_run_with_thinking_and_two_tool_calls_assembles_entries(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(
        think_talk_and_call_two_tools(), Reply(events=anthropic_text_stream("Sunny, and 5."))
    )

    result = await Runner.run(agent(anthropic_model), "Weather in Paris, and 2+3?")

    assert result.output == "Sunny, and 5."
    assert result.entries == [
        InputEntry(role="user", content="Weather in Paris, and 2+3?"),
        ReasoningEntry(
            content="User wants weather.", provider="anthropic", metadata={"signature": "sig-abc"}
        ),
        AssistantTextEntry(content="Let me check."),
        ToolCallEntry(call_id="toolu_w", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCallEntry(call_id="toolu_a", name="add", arguments='{"a": 2, "b": 3}'),
        ToolResultEntry(call_id="toolu_w", output="sunny in Paris", raw="sunny in Paris"),
        ToolResultEntry(call_id="toolu_a", output="5", raw=5),
        AssistantTextEntry(content="Sunny, and 5."),
    ]
    # input counts the whole prompt: plain + cache reads + cache writes.
    assert result.usage == Usage(
        input_tokens=160 + 10, output_tokens=35, cache_read_tokens=100, cache_write_tokens=20
    )
    assert result.finish_reason == "stop"


async def test_wire_has_system_param_signed_thinking_and_results_in_one_user_message(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(think_talk_and_call_two_tools(), Reply(events=anthropic_text_stream("Sunny.")))

    await Runner.run(agent(anthropic_model), "Weather in Paris, and 2+3?")

    first, second = (r.body for r in server.requests)
    assert server.requests[0].path == "/v1/messages"
    # SDK versions differ in the header that carries the key; it must be in one of them.
    assert any("sk-ant-test" in v for v in server.requests[0].headers.values())
    assert first["system"] == "You are terse."
    assert first["max_tokens"] == 16384  # 0.9.119's default when the settings give none
    assert first["stream"] is True
    assert first["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris, and 2+3?"}]}
    ]
    assert [t["name"] for t in first["tools"]] == ["get_weather", "add", "recall_tool_result"]
    assert first["tools"][0]["input_schema"]["properties"].keys() == {"city"}
    assert second["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "User wants weather.", "signature": "sig-abc"},
                {"type": "text", "text": "Let me check."},
                {
                    "type": "tool_use",
                    "id": "toolu_w",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {"a": 2, "b": 3}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_w", "content": "sunny in Paris"},
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "5"},
            ],
        },
    ]


async def test_failed_tool_result_is_marked_as_error_on_the_wire(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(
        Reply(events=anthropic_tool_stream("toolu_x", "add", '{"a": "not a number"}')),
        Reply(events=anthropic_text_stream("Sorry.")),
    )

    await Runner.run(agent(anthropic_model), "add nonsense")

    result_block = server.requests[1].body["messages"][-1]["content"][0]
    assert result_block["tool_use_id"] == "toolu_x"
    assert result_block["is_error"] is True


async def test_model_settings_reach_the_wire(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(*(Reply(events=anthropic_text_stream("hi")) for _ in range(3)))
    thinking = {"thinking": {"type": "enabled", "budget_tokens": 1024}}

    await Runner.run(
        agent(
            anthropic_model,
            settings=ModelSettings(
                temperature=0.3,
                max_tokens=2000,
                top_p=0.8,
                tool_choice="required",
                parallel_tool_calls=False,
                extra_body=thinking,
            ),
        ),
        "hi",
    )
    await Runner.run(agent(anthropic_model, settings=ModelSettings(tool_choice="add")), "hi")
    await Runner.run(agent(anthropic_model, settings=ModelSettings(tool_choice="none")), "hi")

    body = server.requests[0].body
    assert body["temperature"] == 0.3
    assert body["max_tokens"] == 2000
    assert body["top_p"] == 0.8
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert server.requests[1].body["tool_choice"] == {"type": "tool", "name": "add"}
    assert server.requests[2].body["tool_choice"] == {"type": "none"}


async def test_max_tokens_default_comes_from_the_provider(server: ProtocolServer) -> None:
    server.add(Reply(events=anthropic_text_stream("hi")))
    async with AnthropicProvider(
        "claude-test", base_url=server.url, api_key="k", max_tokens=777
    ) as model:
        await Runner.run(agent(model), "hi")

    assert server.requests[0].body["max_tokens"] == 777


async def test_streamed_run_shows_thinking_and_text_as_they_arrive(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(think_talk_and_call_two_tools(), Reply(events=anthropic_text_stream("Sunny!")))

    handle = Runner.stream(agent(anthropic_model), "go")
    events = [e async for e in handle]

    assert [e.delta for e in events if isinstance(e, ReasoningDelta)] == ["User wants", " weather."]
    texts = [e.delta for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "Let me check.Sunny!"
    assert len(texts) >= 4


async def test_length_stop_reason_is_reported_as_length(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(
        Reply(
            events=anthropic_text_stream(
                "This answer was cut", stop_reason="max_tokens", output_tokens=4096
            )
        )
    )

    result = await Runner.run(agent(anthropic_model, tools=[]), "write a novel")

    assert result.finish_reason == "length"
    assert result.output == "This answer was cut"


async def test_reasoning_from_another_provider_is_not_sent_to_anthropic(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(Reply(events=anthropic_text_stream("ok")))
    history = [
        InputEntry(role="user", content="earlier"),
        ReasoningEntry(content="unsigned thoughts", provider="openai"),
        AssistantTextEntry(content="earlier answer"),
        InputEntry(role="user", content="now"),
    ]

    await Runner.run(agent(anthropic_model, tools=[]), history)

    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "earlier"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "earlier answer"}]},
        {"role": "user", "content": [{"type": "text", "text": "now"}]},
    ]


async def test_redacted_thinking_is_kept_and_sent_back_unchanged(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    redacted = anthropic_event(
        "content_block_start",
        {"index": 0, "content_block": {"type": "redacted_thinking", "data": "opaque-bytes"}},
    )
    server.add(
        Reply(
            events=[
                anthropic_start(),
                redacted,
                anthropic_event("content_block_stop", {"index": 0}),
                *anthropic_tool_block(1, "toolu_1", "add", ['{"a": 1, "b": 2}']),
                *anthropic_end("tool_use", 9),
            ]
        ),
        Reply(events=anthropic_text_stream("3")),
    )

    result = await Runner.run(agent(anthropic_model), "1+2")

    kept = result.entries[1]
    assert isinstance(kept, ReasoningEntry) and kept.metadata == {"redacted": "opaque-bytes"}
    assistant = server.requests[1].body["messages"][1]
    assert assistant["content"][0] == {"type": "redacted_thinking", "data": "opaque-bytes"}
