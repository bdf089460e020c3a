"""``ModelSettings(stop=..., provider_options=...)``: stop sequences and per-vendor raw fields,
as programs written for lovia 0.9.119 set them, reach the wire of each provider."""

from __future__ import annotations

import pytest

from lovia import Agent, ModelSettings, Runner, UserError
from lovia.providers import AnthropicProvider, OpenAIChatProvider

from .common import add
from .server import (
    ProtocolServer,
    Reply,
    anthropic_text_stream,
    anthropic_tool_stream,
    openai_text_stream,
)

OPTIONS = {
    "openai": {"seed": 7, "logprobs": True, "stream_options": None},
    "openai-chat": {"seed": 8},
    "anthropic": {"metadata": {"user_id": "u1"}, "top_k": 3},
    "claude": {"top_k": 5},
}
SETTINGS = ModelSettings(temperature=0.3, stop=["END", "STOP"], provider_options=OPTIONS)


async def test_openai_gets_stop_and_its_own_options(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(Reply(events=openai_text_stream("hi")))
    agent = Agent("a", model=openai_model, settings=SETTINGS)
    assert (await Runner.run(agent, "hello")).output == "hi"

    (sent,) = [r.body for r in server.requests]
    assert sent["stop"] == ["END", "STOP"]
    assert sent["temperature"] == 0.3
    assert sent["seed"] == 8  # "openai-chat" is read after "openai"
    assert sent["logprobs"] is True
    assert "stream_options" not in sent  # None takes out a field the provider sends
    assert "metadata" not in sent and "top_k" not in sent  # Anthropic's are not sent


async def test_anthropic_gets_stop_sequences_and_its_own_options(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(Reply(events=anthropic_text_stream("hi")))
    agent = Agent("a", model=anthropic_model, settings=SETTINGS)
    assert (await Runner.run(agent, "hello")).output == "hi"

    (sent,) = [r.body for r in server.requests]
    assert sent["stop_sequences"] == ["END", "STOP"]
    assert "stop" not in sent
    assert sent["temperature"] == 0.3
    assert sent["metadata"] == {"user_id": "u1"}
    assert sent["top_k"] == 5  # "claude" is read after "anthropic"
    assert "seed" not in sent and "logprobs" not in sent


async def test_settings_without_the_new_fields_send_neither(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(Reply(events=openai_text_stream("hi")))
    await Runner.run(Agent("a", model=openai_model), "hello")
    (sent,) = [r.body for r in server.requests]
    assert "stop" not in sent and "seed" not in sent
    assert sent["stream_options"] == {"include_usage": True}


async def test_anthropic_cache_system_marks_tools_system_and_the_stable_history(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    server.add(
        Reply(events=anthropic_tool_stream("toolu_1", "add", '{"a": 2, "b": 3}')),
        Reply(events=anthropic_text_stream("5")),
    )
    agent = Agent(
        "a",
        instructions="You add numbers.",
        model=anthropic_model,
        tools=[add],
        settings=ModelSettings(provider_options={"anthropic": {"cache_system": True}}),
    )
    assert (await Runner.run(agent, "2+3?")).output == "5"

    first, second = (r.body for r in server.requests)
    for sent in (first, second):
        assert "cache_system" not in sent  # an instruction to lovia, not a field of the API
        assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert all("cache_control" not in t for t in sent["tools"][:-1])
        assert sent["system"] == [
            {"type": "text", "text": "You add numbers.", "cache_control": {"type": "ephemeral"}}
        ]
    # The first call has only the new user text: nothing stable to mark in the history.
    assert not any(
        "cache_control" in block
        for m in first["messages"]
        for block in (m["content"] if isinstance(m["content"], list) else [])
    )
    # The second marks the tool result, the last block before anything new.
    marked = [
        block
        for m in second["messages"]
        for block in (m["content"] if isinstance(m["content"], list) else [])
        if "cache_control" in block
    ]
    assert [b["type"] for b in marked] == ["tool_result"]
    assert marked[0]["tool_use_id"] == "toolu_1"


async def test_anthropic_cache_ttl_marks_with_the_one_hour_cache(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    # 0.9.119's providers page: {"cache_ttl": "1h"} keeps the cache an hour and implies
    # cache_system; it is lovia's switch, never a field of the request (compat)
    server.add(
        Reply(events=anthropic_tool_stream("toolu_1", "add", '{"a": 2, "b": 3}')),
        Reply(events=anthropic_text_stream("5")),
        Reply(events=anthropic_text_stream("6")),
    )
    hour = {"type": "ephemeral", "ttl": "1h"}
    agent = Agent(
        "a",
        instructions="You add numbers.",
        model=anthropic_model,
        tools=[add],
        settings=ModelSettings(provider_options={"claude": {"cache_ttl": "1h"}}),
    )
    assert (await Runner.run(agent, "2+3?")).output == "5"
    first, second = (r.body for r in server.requests)
    for sent in (first, second):
        assert "cache_ttl" not in sent
        assert sent["tools"][-1]["cache_control"] == hour
        assert sent["system"][0]["cache_control"] == hour
    marked = [
        block["cache_control"]
        for m in second["messages"]
        for block in (m["content"] if isinstance(m["content"], list) else [])
        if "cache_control" in block
    ]
    assert marked == [hour]

    five = agent.clone(settings=ModelSettings(provider_options={"anthropic": {"cache_ttl": "5m"}}))
    assert (await Runner.run(five, "3+3?")).output == "6"
    assert server.requests[-1].body["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_anthropic_cache_ttl_other_than_5m_or_1h_is_refused(
    server: ProtocolServer, anthropic_model: AnthropicProvider
) -> None:
    agent = Agent(
        "a",
        model=anthropic_model,
        settings=ModelSettings(provider_options={"anthropic": {"cache_ttl": "2h"}}),
    )
    with pytest.raises(UserError, match="cache_ttl '2h'") as caught:
        await Runner.run(agent, "hi")
    assert caught.value.hint
    assert server.requests == []
