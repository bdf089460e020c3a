"""Model strings and the environment pick the provider, its URL and its key."""

from __future__ import annotations

import pytest

from lovia import (
    Agent,
    AnthropicProvider,
    OpenAIChatProvider,
    Runner,
    UserError,
    model_from_env,
)

from .dialects import ANTHROPIC, OPENAI
from .server import ProtocolServer


@pytest.mark.parametrize(
    ("spec", "cls", "name"),
    [
        ("openai:gpt-x", OpenAIChatProvider, "gpt-x"),
        ("llama-3.1-8b", OpenAIChatProvider, "llama-3.1-8b"),  # a bare name means OpenAI
        ("openai:qwen3:8b", OpenAIChatProvider, "qwen3:8b"),  # an Ollama tag keeps its colon
        ("anthropic:claude-y", AnthropicProvider, "claude-y"),
    ],
)
def test_lovia_model_string_resolves_to_a_provider(
    monkeypatch: pytest.MonkeyPatch, spec: str, cls: type, name: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("LOVIA_MODEL", spec)

    assert model_from_env() == spec  # the string, as in 0.9.119
    model = Agent("helper", model=model_from_env()).resolve_provider()

    assert isinstance(model, cls)
    assert model.model == name
    env_model = Agent("helper").resolve_provider()  # model=None reads LOVIA_MODEL too
    assert isinstance(env_model, cls) and env_model.model == name


def test_a_bare_name_with_a_colon_hints_at_the_openai_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    with pytest.raises(UserError) as info:
        Agent("helper", model="qwen3:8b").run_sync("hi")

    assert info.value.hint is not None and "'openai:qwen3:8b'" in info.value.hint


def test_unknown_provider_prefix_is_a_user_error_with_a_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOVIA_MODEL", "mistral:large")

    assert model_from_env() == "mistral:large"  # a vendor may be registered later
    with pytest.raises(UserError) as info:
        Agent("helper", model=model_from_env()).resolve_provider()

    assert "mistral" in info.value.message
    assert info.value.hint is not None and "openai:" in info.value.hint


def test_no_lovia_model_is_a_user_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    with pytest.raises(UserError) as info:
        model_from_env()
    assert info.value.hint is not None and "LOVIA_MODEL" in info.value.hint
    assert model_from_env(required=False) is None
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "gpt-x")  # only LOVIA_MODEL counts
    assert model_from_env(required=False) is None


async def test_openai_run_from_environment_alone(
    server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOVIA_MODEL", "openai:from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    server.add(OPENAI.text("hello"))

    result = await Runner.run(Agent("helper"), "hi")

    assert result.output == "hello"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "from-env"
    assert request.headers["authorization"] == "Bearer sk-env"


async def test_anthropic_model_string_uses_its_base_url_and_key(
    server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    server.add(ANTHROPIC.text("hello"))

    result = await Runner.run(Agent("helper", model="anthropic:claude-env"), "hi")

    assert result.output == "hello"
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.body["model"] == "claude-env"
    assert any("sk-ant-env" in v for v in request.headers.values())


def test_explicit_key_wins_over_a_missing_variable() -> None:
    model = OpenAIChatProvider("m", api_key="explicit", base_url="http://127.0.0.1:9/v1")
    assert model.client.api_key == "explicit"
    model.check_ready()
    keyless = AnthropicProvider("m")  # built; a call to Anthropic's API would fail
    with pytest.raises(UserError) as info:
        keyless.check_ready()
    assert info.value.hint is not None and "ANTHROPIC_API_KEY" in info.value.hint


@pytest.mark.parametrize(
    ("spec", "fix"),
    [
        ("opnai:gpt-4.1", "'openai:gpt-4.1'"),
        ("antropic:claude-x", "'anthropic:claude-x'"),
        ("openia:llama3", "'openai:llama3'"),
    ],
)
def test_a_mistyped_prefix_fails_when_the_agent_runs_and_says_did_you_mean(
    spec: str, fix: str
) -> None:
    agent = Agent("helper", model=spec)  # built, as in 0.9.119: it may never run
    with pytest.raises(UserError) as info:
        agent.resolve_provider()  # no key needed: the string alone is wrong

    assert "did you mean" in info.value.message
    assert info.value.hint == f"write {fix}"
    assert "openai:opnai" not in info.value.hint


@pytest.mark.parametrize("spec", ["openai:", "anthropic:", ""])
def test_a_model_string_without_a_name_fails_when_the_agent_runs(spec: str) -> None:
    agent = Agent("helper", model=spec)
    with pytest.raises(UserError) as info:
        agent.resolve_provider()
    assert info.value.hint


@pytest.mark.parametrize(
    ("spec", "cls"),
    [
        ("OpenAI:gpt-x", OpenAIChatProvider),
        ("oai:gpt-x", OpenAIChatProvider),
        ("openai-chat:gpt-x", OpenAIChatProvider),
        ("claude:claude-y", AnthropicProvider),
    ],
)
def test_lovia_0_9_119_prefix_aliases_and_any_case_are_read(
    monkeypatch: pytest.MonkeyPatch, spec: str, cls: type
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("LOVIA_MODEL", spec)
    assert isinstance(Agent("helper", model=model_from_env()).resolve_provider(), cls)


def test_a_bare_claude_name_warns_at_the_agent_and_its_missing_key_names_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.warns(UserWarning, match="anthropic:claude-sonnet-4-5") as caught:
        agent = Agent("helper", model="claude-sonnet-4-5")
    assert caught[0].filename == __file__  # the warning points at the user's line

    with pytest.raises(UserError) as info, pytest.warns(UserWarning):
        agent.run_sync("hi")

    assert "OPENAI_API_KEY" in info.value.message
    assert info.value.hint is not None
    assert "'anthropic:claude-sonnet-4-5'" in info.value.hint
    assert "ANTHROPIC_API_KEY" in info.value.hint


def test_a_bare_claude_name_still_goes_to_the_openai_compatible_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bare name stays OpenAI-compatible (a gateway may serve Claude that way)."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("LOVIA_MODEL", "claude-sonnet-4-5")
    with pytest.warns(UserWarning):
        model = Agent("helper", model=model_from_env()).resolve_provider()
    assert isinstance(model, OpenAIChatProvider) and model.model == "claude-sonnet-4-5"


def test_a_bare_claude_name_is_also_logged_on_lovia_providers_as_in_0_9_119(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 36: 0.9.119's own tests read the record on ``lovia.providers``; it is there as
    well as the UserWarning."""
    from lovia.providers import provider_from_string

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with caplog.at_level("WARNING", logger="lovia.providers"), pytest.warns(UserWarning):
        provider = provider_from_string("claude-sonnet-4-5")
    assert isinstance(provider, OpenAIChatProvider)
    records = [r for r in caplog.records if r.name == "lovia.providers"]
    assert len(records) == 1 and records[0].levelname == "WARNING"
    assert "anthropic:claude-sonnet-4-5" in records[0].getMessage()
