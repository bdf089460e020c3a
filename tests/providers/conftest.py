"""Fixtures: a protocol server on 127.0.0.1 per test, and providers pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from lovia import AnthropicProvider, OpenAIChatProvider, Provider

from .dialects import DIALECTS, Dialect
from .server import ProtocolServer


@pytest.fixture(autouse=True)
def _no_endpoint_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own base URLs must not leak into a test."""
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[ProtocolServer]:
    srv = ProtocolServer().start()
    try:
        yield srv
    finally:
        srv.close()
    assert not srv.errors, srv.errors


@pytest.fixture
async def openai_model(server: ProtocolServer) -> AsyncIterator[OpenAIChatProvider]:
    async with OpenAIChatProvider(
        "test-model", base_url=f"{server.url}/v1", api_key="sk-test"
    ) as model:
        yield model


@pytest.fixture
async def anthropic_model(server: ProtocolServer) -> AsyncIterator[AnthropicProvider]:
    async with AnthropicProvider(
        "claude-test", base_url=server.url, api_key="sk-ant-test"
    ) as model:
        yield model


@pytest.fixture(params=DIALECTS, ids=lambda d: d.name)
def dialect(request: pytest.FixtureRequest) -> Dialect:
    found: Dialect = request.param
    return found


@pytest.fixture
async def model(dialect: Dialect, server: ProtocolServer) -> AsyncIterator[Provider]:
    """The dialect's provider pointed at the test server (closed after the test)."""
    provider = dialect.provider(server)
    try:
        yield provider
    finally:
        await provider.aclose()  # type: ignore[attr-defined]
