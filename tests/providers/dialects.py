"""Both wire protocols behind one shape, so error and durability tests run against each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lovia import AnthropicProvider, OpenAIChatProvider, Provider

from . import server as s


@dataclass(frozen=True)
class Dialect:
    name: str
    key_variable: str
    make: Callable[..., Any]  # (server, **kwargs) -> provider
    text: Callable[[str], s.Reply]
    tool_call: Callable[[str, str, str], s.Reply]  # (call_id, name, arguments)
    auth_error: s.Reply
    rate_limited: s.Reply
    server_error: s.Reply
    overflow: s.Reply
    path: str

    def provider(self, srv: s.ProtocolServer, **kwargs: Any) -> Provider:
        model: Provider = self.make(srv, **kwargs)
        return model


def _openai(srv: s.ProtocolServer, **kwargs: Any) -> OpenAIChatProvider:
    kwargs.setdefault("api_key", "sk-test")
    return OpenAIChatProvider("test-model", base_url=f"{srv.url}/v1", **kwargs)


def _anthropic(srv: s.ProtocolServer, **kwargs: Any) -> AnthropicProvider:
    kwargs.setdefault("api_key", "sk-ant-test")
    return AnthropicProvider("claude-test", base_url=srv.url, **kwargs)


def _openai_call(call_id: str, name: str, arguments: str) -> s.Reply:
    half = len(arguments) // 2
    return s.Reply(
        events=[
            s.openai_chunk(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments[:half]},
                        }
                    ],
                }
            ),
            s.openai_chunk(
                {"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}
            ),
            s.openai_chunk({}, finish="tool_calls"),
            s.openai_chunk(usage=s.openai_usage(20, 10)),
            s.sse("[DONE]"),
        ]
    )


def _anthropic_call(call_id: str, name: str, arguments: str) -> s.Reply:
    half = len(arguments) // 2
    pieces = [arguments[:half], arguments[half:]]
    return s.Reply(
        events=s.anthropic_tool_stream(call_id, name, pieces, input_tokens=20, output_tokens=10)
    )


OPENAI = Dialect(
    name="openai",
    key_variable="OPENAI_API_KEY",
    make=_openai,
    text=lambda t: s.Reply(events=s.openai_text_stream(t)),
    tool_call=_openai_call,
    auth_error=s.openai_error(
        401, "Incorrect API key provided: sk-test.", "invalid_request_error", "invalid_api_key"
    ),
    rate_limited=s.openai_error(
        429, "Rate limit reached for requests", "requests", "rate_limit_exceeded"
    ),
    server_error=s.openai_error(503, "The server is overloaded.", "server_error"),
    overflow=s.openai_error(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9100 tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
    ),
    path="/v1/chat/completions",
)

ANTHROPIC = Dialect(
    name="anthropic",
    key_variable="ANTHROPIC_API_KEY",
    make=_anthropic,
    text=lambda t: s.Reply(events=s.anthropic_text_stream(t)),
    tool_call=_anthropic_call,
    auth_error=s.anthropic_error(401, "authentication_error", "invalid x-api-key"),
    rate_limited=s.anthropic_error(429, "rate_limit_error", "Number of requests has exceeded"),
    server_error=s.anthropic_error(529, "overloaded_error", "Overloaded"),
    overflow=s.anthropic_error(
        400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"
    ),
    path="/v1/messages",
)

DIALECTS = [OPENAI, ANTHROPIC]
