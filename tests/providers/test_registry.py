"""Model-string prefixes of other vendors: ``register_provider``, the ``lovia.providers``
entry-point group, and ``provider_from_string`` with its overrides."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, ModelSettings, Runner, UserError
from lovia.providers import (
    AnthropicProvider,
    OpenAIChatProvider,
    provider_from_string,
    register_provider,
    supports_vision,
)
from lovia.testing import ScriptedProvider, text

from .server import ProtocolServer, openai_text_stream
from .server import Reply as ServerReply

SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_registered_prefix_builds_the_agents_model() -> None:
    made: list[str] = []

    def factory(name: str) -> ScriptedProvider:
        made.append(name)
        return ScriptedProvider([text(f"hello from {name}")])

    register_provider("AcmeReg", factory)
    result = Runner.run_sync(Agent("helper", model="acmereg:big-1"), "hi")

    assert result.output == "hello from big-1"
    assert made == ["big-1"]  # the prefix is case-insensitive, the model name is the rest


def test_a_later_registration_replaces_an_earlier_one() -> None:
    register_provider("acmetwice", lambda name: ScriptedProvider([text("first")]))
    register_provider("acmetwice", lambda name: ScriptedProvider([text("second")]))

    assert Runner.run_sync(Agent("helper", model="acmetwice:m"), "hi").output == "second"


def test_an_unknown_prefix_says_how_to_add_one() -> None:
    with pytest.raises(UserError) as info:
        provider_from_string("nosuchvendor:m")

    assert info.value.hint is not None and "register_provider" in info.value.hint


def test_a_factory_without_keywords_refuses_overrides_but_not_an_empty_extra_body() -> None:
    register_provider("acmeplain", lambda name: ScriptedProvider([text("ok")]))

    assert isinstance(provider_from_string("acmeplain:m", extra_body={}), ScriptedProvider)
    with pytest.raises(UserError, match="does not accept") as info:
        provider_from_string("acmeplain:m", api_key="k")
    assert info.value.hint is not None


def test_overrides_reach_a_factory_that_takes_them() -> None:
    seen: dict[str, Any] = {}

    def factory(name: str, **overrides: Any) -> ScriptedProvider:
        seen.update(overrides, name=name)
        return ScriptedProvider()

    register_provider("acmekw", factory)
    provider_from_string("acmekw:m", api_key="k", base_url="http://x", supports_vision=True)

    assert seen == {"name": "m", "api_key": "k", "base_url": "http://x", "supports_vision": True}


@pytest.mark.parametrize("bad", ["", "a:b", None])
def test_a_prefix_must_be_a_word(bad: Any) -> None:
    with pytest.raises(UserError):
        register_provider(bad, lambda name: ScriptedProvider())


async def test_provider_from_string_overrides_key_url_and_extra_body(
    server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.add(
        ServerReply(events=openai_text_stream("one")), ServerReply(events=openai_text_stream("two"))
    )
    provider = provider_from_string(
        "openai:test-model",
        api_key="sk-given",
        base_url=f"{server.url}/v1",
        extra_body={"reasoning_effort": "low", "service_tier": "flex"},
    )
    assert provider.base_url == f"{server.url}/v1"  # type: ignore[attr-defined]
    async with provider:  # type: ignore[attr-defined]
        first = await Runner.run(Agent("helper", model=provider), "hi")
        agent = Agent(
            "helper",
            model=provider,
            settings=ModelSettings(extra_body={"reasoning_effort": "high"}),
        )
        second = await Runner.run(agent, "hi")

    assert (first.output, second.output) == ("one", "two")
    [a, b] = server.requests
    assert a.headers["authorization"] == "Bearer sk-given"
    assert (a.body["reasoning_effort"], a.body["service_tier"]) == ("low", "flex")
    # the agent's own extra_body wins key by key; the provider's other keys stay
    assert (b.body["reasoning_effort"], b.body["service_tier"]) == ("high", "flex")


def test_supports_vision_reads_the_providers_flag() -> None:
    local = "http://127.0.0.1:9/v1"
    on = provider_from_string("vl-model", api_key="k", base_url=local, supports_vision=True)
    off = OpenAIChatProvider("m", api_key="k", base_url=local)
    claude = AnthropicProvider("claude-x", api_key="k")

    assert [supports_vision(p) for p in (on, off, claude)] == [True, False, True]
    assert supports_vision(object()) is False
    assert supports_vision(None) is False


def test_anthropic_vision_follows_the_host_unless_told() -> None:
    official = provider_from_string("anthropic:claude-x", api_key="k")
    gateway = provider_from_string("anthropic:claude-x", base_url="http://127.0.0.1:9/v1")
    told = provider_from_string(
        "anthropic:claude-x", base_url="http://127.0.0.1:9/v1", supports_vision=True
    )
    blind = provider_from_string("anthropic:claude-x", api_key="k", supports_vision=False)
    assert [supports_vision(p) for p in (official, gateway, told, blind)] == [
        True,
        False,
        True,
        False,
    ]


def test_the_openai_provider_is_named_as_in_0_9_119() -> None:
    assert provider_from_string("openai:gpt-x", api_key="k").name == "openai-chat"
    assert provider_from_string("gpt-x", api_key="k").name == "openai-chat"


def _package(root: Path, module: str, body: str, entry: str) -> None:
    (root / f"{module}.py").write_text(textwrap.dedent(body))
    info = root / f"{module}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[lovia.providers]\n{entry}\n")


def _run(root: Path, program: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": f"{root}:{SRC}", "PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "k"},
    )


def test_an_installed_package_adds_its_prefix_through_the_entry_point_group(
    tmp_path: Path,
) -> None:
    _package(
        tmp_path,
        "acme_models",
        """
        from lovia.testing import ScriptedProvider, text

        class AcmeProvider(ScriptedProvider):
            def __init__(self, model):
                super().__init__([text("acme says " + model)], model=model)
        """,
        "acme = acme_models:AcmeProvider\nopenai = acme_models:AcmeProvider",
    )
    done = _run(
        tmp_path,
        """
        from lovia import Agent, Runner
        from lovia.providers import provider_from_string
        print(Runner.run_sync(Agent("a", model="ACME:rocket"), "hi").output)
        print(type(provider_from_string("openai:gpt-x")).__name__)
        """,
    )

    assert done.returncode == 0, done.stderr
    # a package cannot take over a built-in prefix
    assert done.stdout.splitlines() == ["acme says rocket", "OpenAIChatProvider"]


def test_a_broken_provider_package_is_named_only_when_its_prefix_is_used(tmp_path: Path) -> None:
    _package(tmp_path, "broken_models", "raise RuntimeError('boom')\n", "broken = broken_models:X")
    done = _run(
        tmp_path,
        """
        from lovia import UserError
        from lovia.providers import provider_from_string
        print(type(provider_from_string("openai:gpt-x")).__name__)
        try:
            provider_from_string("broken:m")
        except UserError as exc:
            print(str(exc).splitlines()[0])
        """,
    )

    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "OpenAIChatProvider"
    assert "failed to load" in second and "boom" in second


class _Closable(ScriptedProvider):
    def __init__(self) -> None:
        super().__init__([text("done")])
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_a_provider_built_from_a_model_string_is_closed_when_its_run_ends() -> None:
    made: list[_Closable] = []

    def factory(name: str) -> _Closable:
        made.append(_Closable())
        return made[-1]

    register_provider("acmeclose", factory)
    agent = Agent("helper", model="acmeclose:m")
    first = await Runner.run(agent, "hi")
    second = await Runner.run(agent, "again")

    assert (first.output, second.output) == ("done", "done")
    assert [p.closed for p in made] == [1, 1]  # one provider per run, each closed once


async def test_a_provider_the_caller_passes_is_never_closed() -> None:
    mine = _Closable()

    result = await Runner.run(Agent("helper", model=mine), "hi")

    assert result.output == "done" and mine.closed == 0
