"""What a failed model call's ProviderError says about where it failed (``vendor``, ``model``,
``retryable``), as 0.9.119's did, and an OpenAI-compatible stream that ends with ``[DONE]``
but no ``finish_reason`` (some compatible servers never send one), which is a whole answer."""

from __future__ import annotations

import dataclasses

import pytest

from lovia import Agent, OpenAIChatProvider, Provider, ProviderError, RetryPolicy, Runner

from .dialects import Dialect
from .server import ProtocolServer, Reply, openai_chunk, sse


async def test_an_http_error_and_a_cut_stream_name_the_vendor_and_the_model(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    full = dialect.text("Hello there, my friend, how are you?")
    server.add(dialect.rate_limited, dataclasses.replace(full, end_early_after=4))
    vendor = "openai" if dialect.name == "openai" else "anthropic"
    name = "test-model" if vendor == "openai" else "claude-test"
    agent = Agent("a", model=model, retry=RetryPolicy(max_attempts=1))

    with pytest.raises(ProviderError) as refused:
        await Runner.run(agent, "hi")
    with pytest.raises(ProviderError) as cut:
        await Runner.run(agent, "hi")

    assert (refused.value.vendor, refused.value.model, refused.value.status_code) == (
        vendor,
        name,
        429,
    )
    assert (cut.value.vendor, cut.value.model, cut.value.retryable) == (vendor, name, True)


async def test_a_server_that_cannot_be_reached_is_worth_another_try() -> None:
    async with OpenAIChatProvider("m", base_url="http://127.0.0.1:9/v1", api_key="k") as model:
        with pytest.raises(ProviderError) as info:
            await Runner.run(Agent("a", model=model, retry=RetryPolicy(max_attempts=1)), "hi")
    assert (info.value.vendor, info.value.model, info.value.retryable) == ("openai", "m", True)


@pytest.mark.parametrize("blank_line_at_the_end", [True, False])
async def test_done_without_a_finish_reason_is_a_whole_answer(
    server: ProtocolServer, blank_line_at_the_end: bool
) -> None:
    done = sse("[DONE]") if blank_line_at_the_end else "data: [DONE]\n"
    server.add(Reply(events=[openai_chunk({"role": "assistant", "content": "hi"}), done]))
    async with OpenAIChatProvider("m", base_url=f"{server.url}/v1", api_key="k") as model:
        result = await Runner.run(Agent("a", model=model), "hello")
    assert result.output == "hi"
    assert len(server.requests) == 1
