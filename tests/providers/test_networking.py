"""Timeouts, proxies and TLS settings of the providers (``lovia.http_config``), for both
protocols, against real servers on 127.0.0.1."""

from __future__ import annotations

import ssl
from pathlib import Path

import certifi
import pytest

from lovia import Agent, ProviderError, RetryPolicy, Runner, UserError
from lovia.http_config import (
    DEFAULT_TIMEOUT,
    resolve_timeout,
    resolve_trust_env,
    resolve_verify,
)

from .dialects import Dialect
from .server import ProtocolServer, Reply

NO_RETRY = RetryPolicy(max_attempts=1)


@pytest.fixture(autouse=True)
def _no_network_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "LOVIA_PROVIDER_TIMEOUT",
        "LOVIA_PROVIDER_TRUST_ENV",
        "LOVIA_HTTP_CA_BUNDLE",
        "LOVIA_HTTP_INSECURE",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


async def test_a_server_that_stops_answering_fails_after_the_timeout_from_the_environment(
    dialect: Dialect, server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOVIA_PROVIDER_TIMEOUT", "0.3")
    server.add(Reply(events=[], hold_open=True))  # headers, then silence
    provider = dialect.provider(server)
    try:
        with pytest.raises(ProviderError):
            await Runner.run(Agent("helper", model=provider, retry=NO_RETRY), "hi")
    finally:
        await provider.aclose()  # type: ignore[attr-defined]
    assert len(server.requests) == 1


async def test_proxy_variables_are_ignored_unless_trust_env_is_on(
    dialect: Dialect, server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = ProtocolServer().start()
    try:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        server.add(dialect.text("direct"))
        proxy.add(dialect.text("through the proxy"))

        direct = dialect.provider(server)
        monkeypatch.setenv("LOVIA_PROVIDER_TRUST_ENV", "1")
        proxied = dialect.provider(server)
        try:
            first = await Runner.run(Agent("helper", model=direct), "hi")
            second = await Runner.run(Agent("helper", model=proxied), "hi")
        finally:
            await direct.aclose()  # type: ignore[attr-defined]
            await proxied.aclose()  # type: ignore[attr-defined]
    finally:
        proxy.close()

    assert (first.output, second.output) == ("direct", "through the proxy")
    assert len(server.requests) == 1
    [through] = proxy.requests
    assert through.path == f"{server.url}{dialect.path}"  # a proxy gets the absolute URL


async def test_trust_env_argument_beats_the_environment(
    dialect: Dialect, server: ProtocolServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("LOVIA_PROVIDER_TRUST_ENV", "1")
    server.add(dialect.text("direct"))
    provider = dialect.provider(server, trust_env=False)
    try:
        result = await Runner.run(Agent("helper", model=provider), "hi")
    finally:
        await provider.aclose()  # type: ignore[attr-defined]
    assert result.output == "direct"


def test_a_missing_ca_bundle_is_a_user_error_naming_the_variable(
    dialect: Dialect, server: ProtocolServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOVIA_HTTP_CA_BUNDLE", str(tmp_path / "no-such.pem"))

    with pytest.raises(UserError) as info:
        dialect.provider(server)

    assert "LOVIA_HTTP_CA_BUNDLE" in str(info.value) and info.value.hint is not None
    assert isinstance(info.value, FileNotFoundError)


def test_verification_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(resolve_verify(), ssl.SSLContext)
    monkeypatch.setenv("LOVIA_HTTP_CA_BUNDLE", certifi.where())
    context = resolve_verify()
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED
    for on in ("1", "true", " Yes ", "ON"):
        monkeypatch.setenv("LOVIA_HTTP_INSECURE", on)
        assert resolve_verify() is False
    monkeypatch.setenv("LOVIA_HTTP_INSECURE", "0")
    assert resolve_verify() is not False


def test_timeout_and_trust_env_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_timeout(None) == DEFAULT_TIMEOUT == 300.0
    assert resolve_trust_env(None) is False
    monkeypatch.setenv("LOVIA_PROVIDER_TIMEOUT", "42")
    monkeypatch.setenv("LOVIA_PROVIDER_TRUST_ENV", "yes")
    assert (resolve_timeout(None), resolve_timeout(5)) == (42.0, 5.0)
    assert (resolve_trust_env(None), resolve_trust_env(False)) == (True, False)
    for bad in ("soon", "0", "-3", "inf"):
        monkeypatch.setenv("LOVIA_PROVIDER_TIMEOUT", bad)
        assert resolve_timeout(None) == DEFAULT_TIMEOUT


async def test_default_headers_go_with_every_request(
    dialect: Dialect, server: ProtocolServer
) -> None:
    server.add(dialect.text("one"), dialect.text("two"))
    provider = dialect.provider(server, default_headers={"X-Team": "search"})
    try:
        for prompt in ("hi", "again"):
            await Runner.run(Agent("helper", model=provider), prompt)
    finally:
        await provider.aclose()  # type: ignore[attr-defined]
    assert [r.headers.get("x-team") for r in server.requests] == ["search", "search"]


async def test_official_dialect_on_a_server_whose_host_does_not_tell(
    server: ProtocolServer,
) -> None:
    from lovia import ModelSettings, OpenAIChatProvider

    from .dialects import OPENAI

    server.add(OPENAI.text("a"), OPENAI.text("b"))
    url = f"{server.url}/v1"
    settings = ModelSettings(max_tokens=50)
    async with (
        OpenAIChatProvider("m", base_url=url, api_key="k", official_dialect=True) as official,
        OpenAIChatProvider("m", base_url=url, api_key="k") as compatible,
    ):
        # the dialect is the request's shape; vision follows the real host, as in 0.9.119
        assert (official.supports_vision, compatible.supports_vision) == (False, False)
        for provider in (official, compatible):
            await Runner.run(Agent("helper", model=provider, settings=settings), "hi")
    first, second = (r.body for r in server.requests)
    assert first.get("max_completion_tokens") == 50 and "max_tokens" not in first
    assert second.get("max_tokens") == 50 and "max_completion_tokens" not in second
