"""Which requests need a key, and which dialect a server is spoken to in (issue 12).

A key is required exactly where it is needed: by the vendor's own API. A server of one's own
(a base URL elsewhere) is asked without any credential header. OpenAI's own API gets
``max_completion_tokens`` and a native JSON schema; other servers get ``max_tokens`` and the
schema in the instructions, unless told otherwise.
"""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from lovia import (
    Agent,
    AnthropicProvider,
    ModelSettings,
    OpenAIChatProvider,
    Runner,
    UserError,
)
from lovia.providers import provider_from_string, supports_vision

from .dialects import ANTHROPIC, OPENAI, Dialect
from .server import ProtocolServer

CREDENTIAL_HEADERS = {"authorization", "x-api-key"}


def _base(dialect: Dialect, server: ProtocolServer) -> str:
    return f"{server.url}/v1" if dialect.name == "openai" else server.url


def _credentials(headers: dict[str, str]) -> set[str]:
    return CREDENTIAL_HEADERS & set(headers)


@pytest.mark.parametrize("via", ["environment", "model_string_override", "constructor"])
async def test_a_server_of_ones_own_is_asked_without_any_credential_header(
    dialect: Dialect, server: ProtocolServer, monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    monkeypatch.delenv(dialect.key_variable, raising=False)
    base = _base(dialect, server)
    server.add(dialect.text("no key needed"))
    if via == "environment":
        monkeypatch.setenv(f"{dialect.name.upper()}_BASE_URL", base)
        model: object = f"{dialect.name}:some-model"
    elif via == "model_string_override":
        model = provider_from_string(f"{dialect.name}:some-model", base_url=base)
    else:
        cls = OpenAIChatProvider if dialect.name == "openai" else AnthropicProvider
        model = cls("some-model", base_url=base)

    result = await Runner.run(Agent("helper", model=model), "hi")  # type: ignore[arg-type]

    assert result.output == "no key needed"
    assert [r.path for r in server.requests] == [dialect.path]
    assert _credentials(server.requests[0].headers) == set()


async def test_the_vendors_own_api_without_a_key_fails_before_anything_is_sent(
    dialect: Dialect, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(dialect.key_variable, raising=False)
    # Building the agent and its provider needs no key: only a call does.
    agent = Agent("helper", model=f"{dialect.name}:some-model")
    provider = provider_from_string(f"{dialect.name}:some-model")
    with pytest.raises(UserError) as early:
        provider.check_ready()  # type: ignore[attr-defined]

    with pytest.raises(UserError) as info:
        await Runner.run(agent, "hi")

    for error in (early.value, info.value):
        assert "no API key" in error.message
        assert error.hint is not None and dialect.key_variable in error.hint
        assert "base_url" in error.hint  # the way out for a server of one's own


@pytest.mark.parametrize(
    ("url", "official"),
    [
        ("https://api.openai.com/v1", True),
        ("https://eu.api.openai.com/v1", True),  # a regional host of the same API
        ("https://evilapi.openai.com/v1", False),  # a look-alike is not OpenAI's API
        ("https://api.deepseek.com", False),
        ("http://127.0.0.1:9/v1", False),
    ],
)
def test_which_hosts_count_as_openais_own_api(
    monkeypatch: pytest.MonkeyPatch, url: str, official: bool
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    provider = OpenAIChatProvider("m", base_url=url)

    assert supports_vision(provider) is official
    assert provider.supports_json_schema is official
    if official:
        with pytest.raises(UserError):
            provider.check_ready()
    else:
        provider.check_ready()  # no key needed there


async def test_official_dialect_changes_the_request_shape_not_the_key_rule(
    server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keyless gateway in front of OpenAI: OpenAI's dialect, and still no key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.add(OPENAI.text("through the gateway"))
    async with OpenAIChatProvider(
        "m", base_url=f"{server.url}/v1", official_dialect=True
    ) as gateway:
        gateway.check_ready()
        agent = Agent("helper", model=gateway, settings=ModelSettings(max_tokens=50))
        result = await Runner.run(agent, "hi")

    assert result.output == "through the gateway"
    request = server.requests[0]
    assert _credentials(request.headers) == set()
    assert request.body["max_completion_tokens"] == 50 and "max_tokens" not in request.body
    # what the model behind it sees is not the dialect's to say, as in 0.9.119
    assert gateway.supports_vision is False


async def test_a_credential_header_of_ones_own_is_sent_as_given(
    dialect: Dialect, server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(dialect.key_variable, raising=False)
    server.add(dialect.text("ok"))
    cls = OpenAIChatProvider if dialect.name == "openai" else AnthropicProvider
    async with cls(
        "m", base_url=_base(dialect, server), default_headers={"Authorization": "Bearer gw-token"}
    ) as provider:
        await Runner.run(Agent("helper", model=provider), "hi")

    assert server.requests[0].headers["authorization"] == "Bearer gw-token"


async def test_a_given_key_is_sent_to_a_server_of_ones_own(
    dialect: Dialect, server: ProtocolServer
) -> None:
    server.add(dialect.text("ok"))
    provider = dialect.provider(server)  # api_key given
    try:
        await Runner.run(Agent("helper", model=provider), "hi")
    finally:
        await provider.aclose()  # type: ignore[attr-defined]

    assert any("sk-" in v for v in server.requests[0].headers.values())


class Forecast(BaseModel):
    city: str
    degrees: int


def _system_text(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return "\n".join(m["content"] for m in messages if m["role"] == "system")


@pytest.mark.parametrize(
    ("options", "native", "limit_field"),
    [
        ({}, False, "max_tokens"),
        ({"supports_json_schema": True}, True, "max_tokens"),
        ({"official_dialect": True}, True, "max_completion_tokens"),
        ({"official_dialect": True, "supports_json_schema": False}, False, "max_completion_tokens"),
    ],
    ids=["compatible", "compatible_with_schema", "official_dialect", "official_without_schema"],
)
async def test_structured_output_goes_natively_or_by_the_instructions(
    server: ProtocolServer, options: dict[str, bool], native: bool, limit_field: str
) -> None:
    server.add(OPENAI.text(json.dumps({"city": "Oslo", "degrees": -3})))
    async with OpenAIChatProvider(
        "m", base_url=f"{server.url}/v1", api_key="k", **options
    ) as provider:
        assert provider.supports_json_schema is native
        agent = Agent(
            "forecaster",
            instructions="Answer briefly.",
            model=provider,
            output_type=Forecast,
            settings=ModelSettings(max_tokens=64),
        )
        result = await Runner.run(agent, "Oslo?")

    assert result.output == Forecast(city="Oslo", degrees=-3)
    body = server.requests[0].body
    (other,) = {"max_tokens", "max_completion_tokens"} - {limit_field}
    assert body[limit_field] == 64 and other not in body
    system = _system_text(body)
    assert system.startswith("Answer briefly.")
    if native:
        assert body["response_format"]["type"] == "json_schema"
        assert "degrees" not in system
    else:
        assert "response_format" not in body
        assert '"degrees"' in system  # the schema rides in the instructions


@pytest.mark.parametrize("via", ["constructor", "environment"])
async def test_an_anthropic_key_goes_out_in_the_documented_x_api_key_header(
    server: ProtocolServer, monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    """Anthropic's API reference authenticates with ``x-api-key``; a compatible server that
    checks only that header must see the key (0.9.119 sent it there too)."""
    server.add(ANTHROPIC.text("ok"))
    if via == "environment":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
        provider = AnthropicProvider("m", base_url=server.url)
        key = "sk-ant-env"
    else:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        provider = AnthropicProvider("m", base_url=server.url, api_key="sk-ant-given")
        key = "sk-ant-given"
    async with provider:
        result = await Runner.run(Agent("helper", model=provider), "hi")

    assert result.output == "ok"
    assert server.requests[0].headers["x-api-key"] == key
