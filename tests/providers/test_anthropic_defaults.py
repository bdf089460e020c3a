"""What an ``AnthropicProvider`` sends when nothing says otherwise, as lovia 0.9.119 did: a
base URL that ends in ``/v1``, 16384 output tokens, and structured output in
``output_config`` rather than in the instructions."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from lovia import Agent, AnthropicProvider, ModelSettings, Runner

from .dialects import ANTHROPIC
from .server import ProtocolServer


class Weather(BaseModel):
    city: str
    temp: int


def test_the_default_base_url_is_anthropics_v1() -> None:
    assert AnthropicProvider("claude-x", api_key="k").base_url == "https://api.anthropic.com/v1"


@pytest.mark.parametrize("suffix", ["/v1", "/v1/", ""])
async def test_a_base_url_ending_in_v1_is_not_given_a_second_one(
    server: ProtocolServer, suffix: str
) -> None:
    server.add(ANTHROPIC.text("hi"))
    async with AnthropicProvider("claude-x", base_url=server.url + suffix) as model:
        await Runner.run(Agent("a", model=model), "hello")

    assert server.requests[0].path == "/v1/messages"
    assert model.base_url == server.url + suffix.rstrip("/")


async def test_the_base_url_can_come_from_the_environment(
    server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"{server.url}/v1")
    server.add(ANTHROPIC.text("hi"))
    async with AnthropicProvider("claude-x") as model:
        await Runner.run(Agent("a", model=model), "hello")

    assert model.base_url == f"{server.url}/v1"
    assert server.requests[0].path == "/v1/messages"


async def test_max_tokens_defaults_to_16384_and_the_settings_win(server: ProtocolServer) -> None:
    server.add(ANTHROPIC.text("one"), ANTHROPIC.text("two"), ANTHROPIC.text("three"))
    async with AnthropicProvider("claude-x", base_url=server.url) as model:
        await Runner.run(Agent("a", model=model), "hello")
        await Runner.run(Agent("a", model=model, settings=ModelSettings(max_tokens=800)), "hello")
    async with AnthropicProvider("claude-x", base_url=server.url, default_max_tokens=2048) as m:
        await Runner.run(Agent("a", model=m), "hello")

    assert [r.body["max_tokens"] for r in server.requests] == [16384, 800, 2048]


async def test_structured_output_goes_in_output_config(server: ProtocolServer) -> None:
    server.add(ANTHROPIC.text('{"city": "Paris", "temp": 3}'))
    async with AnthropicProvider("claude-x", base_url=server.url) as model:
        assert model.supports_json_schema is True
        result = await Runner.run(
            Agent("a", model=model, instructions="Be brief.", output_type=Weather), "weather?"
        )

    assert result.output == Weather(city="Paris", temp=3)
    body = server.requests[0].body
    assert body["system"] == "Be brief."  # no schema in the instructions
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["properties"] == {
        "city": {"type": "string"},
        "temp": {"type": "integer"},
    }
    assert fmt["schema"]["required"] == ["city", "temp"]


async def test_an_output_config_in_extra_body_joins_the_schema(server: ProtocolServer) -> None:
    server.add(ANTHROPIC.text('{"city": "Paris", "temp": 3}'))
    async with AnthropicProvider(
        "claude-x", base_url=server.url, extra_body={"output_config": {"effort": "low"}}
    ) as model:
        await Runner.run(Agent("a", model=model, output_type=Weather), "weather?")

    config = server.requests[0].body["output_config"]
    assert config["effort"] == "low"
    assert config["format"]["type"] == "json_schema"


async def test_a_server_without_json_schema_gets_the_schema_in_the_instructions(
    server: ProtocolServer,
) -> None:
    server.add(ANTHROPIC.text('{"city": "Paris", "temp": 3}'))
    async with AnthropicProvider(
        "claude-x", base_url=server.url, supports_json_schema=False
    ) as model:
        result = await Runner.run(Agent("a", model=model, output_type=Weather), "weather?")

    assert result.output == Weather(city="Paris", temp=3)
    body = server.requests[0].body
    assert "output_config" not in body
    assert '"temp"' in body["system"]
