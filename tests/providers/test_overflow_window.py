"""The window a context-length rejection names (compat): 0.9.119's providers page says a
``ContextOverflowError`` carries ``reported_window``, and its context page that a custom
policy's next request holds it; a 413 is an overflow whatever its words."""

from __future__ import annotations

import json

import pytest

from lovia import (
    Agent,
    AnthropicProvider,
    ContextOverflowError,
    OpenAIChatProvider,
    Runner,
    user,
)
from lovia.context import CompactionRequest, ContextResult

from .server import ProtocolServer, Reply, openai_error, openai_text_stream

OPENAI_OVERFLOW = (
    "This model's maximum context length is 65536 tokens. However, your messages resulted "
    "in 70000 tokens."
)


class Recorder:
    """A custom context policy that keeps what each request told it."""

    def __init__(self) -> None:
        self.seen: list[tuple[bool, int | None]] = []

    async def compact(self, req: CompactionRequest) -> ContextResult:
        self.seen.append((req.overflow, req.reported_window))
        if req.overflow:  # drop the long first message: a smaller view is worth a retry
            return ContextResult(entries=list(req.entries)[1:], changed=True, compacted=True)
        return ContextResult(entries=list(req.entries))


async def test_openai_overflow_names_its_window_to_the_error_and_the_policy(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(
        openai_error(400, OPENAI_OVERFLOW, "invalid_request_error", "context_length_exceeded"),
        Reply(events=openai_text_stream("fits now")),
    )
    policy = Recorder()
    result = await Runner.run(
        Agent("a", model=openai_model, context_policy=policy), [user("x" * 5000), user("hi")]
    )
    assert result.output == "fits now"
    assert policy.seen == [(False, None), (True, 65536)]

    server.add(*[openai_error(400, OPENAI_OVERFLOW, "invalid_request_error")] * 2)
    with pytest.raises(ContextOverflowError) as caught:
        await Runner.run(Agent("a", model=openai_model, retry=None), "hi")
    assert caught.value.reported_window == 65536


async def test_anthropic_prompt_too_long_names_its_window(server: ProtocolServer) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    server.add(*[Reply(400, body)] * 2)
    model = AnthropicProvider("claude-test", base_url=server.url, api_key="sk-ant-test")
    with pytest.raises(ContextOverflowError) as caught:
        await Runner.run(Agent("a", model=model, retry=None), "hi")
    assert caught.value.reported_window == 200000
    assert caught.value.status_code == 400


async def test_request_too_large_is_an_overflow_without_a_window(
    server: ProtocolServer, openai_model: OpenAIChatProvider
) -> None:
    server.add(*[Reply(413, {"error": {"message": "Request too large"}})] * 2)
    with pytest.raises(ContextOverflowError) as caught:
        await Runner.run(Agent("a", model=openai_model, retry=None), "hi")
    assert caught.value.status_code == 413
    assert caught.value.reported_window is None
    assert json.loads(json.dumps(caught.value.to_dict()))["status_code"] == 413
