"""``AnthropicProvider(anthropic_version=...)``, a keyword 0.9.119 documents, is taken and
sent as the ``anthropic-version`` header of every request."""

from __future__ import annotations

import pytest

from lovia import Agent, AnthropicProvider, Runner

from .server import ProtocolServer, Reply, anthropic_text_stream


@pytest.mark.parametrize("version", [None, "2024-01-01"])
async def test_the_version_goes_out_as_the_header(
    server: ProtocolServer, version: str | None
) -> None:
    server.add(Reply(events=anthropic_text_stream("hello")))
    options = {} if version is None else {"anthropic_version": version}
    async with AnthropicProvider(
        "claude-x", base_url=f"{server.url}/v1", api_key="k", **options
    ) as model:
        result = await Runner.run(Agent("a", model=model), "hi")

    assert result.output == "hello"
    [request] = server.requests
    sent = request.headers["anthropic-version"]
    assert sent == version if version is not None else sent  # the SDK's own by default
