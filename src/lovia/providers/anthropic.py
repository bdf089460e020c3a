"""Anthropic's Messages API, streamed.

::

    model = AnthropicProvider("claude-sonnet-4-5")               # ANTHROPIC_API_KEY
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    InputEntry,
    ModelDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UsageDelta,
    call_arguments,
    leading_system_count,
)
from ..usage import Usage
from ._common import (
    KeyPolicy,
    SDKProvider,
    guarded_stream,
    sdk_client,
    sdk_error,
    status_error,
    tool_choice_name,
    with_extra_body,
)
from ._parts import anthropic_blocks
from ._render import BodyCache, Marks
from .base import ToolSpec

if TYPE_CHECKING:
    from ..settings import ModelSettings

__all__ = ["AnthropicProvider", "to_anthropic_messages"]

_KEY = "ANTHROPIC_API_KEY"
_URL = "ANTHROPIC_BASE_URL"

# Anthropic's stop reasons in the words the rest of lovia uses (OpenAI's).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}

# Errors sent as an SSE event arrive with HTTP 200; their type says what really happened.
_EVENT_STATUS = {
    "overloaded_error": 529,
    "api_error": 500,
    "rate_limit_error": 429,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
}


class AnthropicProvider(SDKProvider):
    """A Claude model through the Messages API, streamed.

    The key comes from ``api_key`` or ``ANTHROPIC_API_KEY`` (or a token in
    ``ANTHROPIC_AUTH_TOKEN``); it is needed only by Anthropic's own API, where a call without
    one is a ``UserError`` before anything is sent; another server is asked without a
    credential header. The URL comes from
    ``base_url`` or ``ANTHROPIC_BASE_URL``. The API requires
    ``max_tokens``: ``ModelSettings.max_tokens`` wins, else ``max_tokens`` given here.
    Extended thinking is switched on through ``ModelSettings(extra_body={"thinking": {...}})``;
    thinking blocks come back as ``ReasoningEntry``s whose signature is kept in ``metadata``
    and sent back on later turns, as the API requires.
    ``extra_body`` holds raw request fields for every call of this provider; an agent's
    ``ModelSettings.extra_body`` wins key by key. Images (in input and in tool results) are
    always sent, so ``supports_vision`` is true.

    ``timeout`` (seconds) and ``trust_env`` (honour proxy variables) fall back to the
    environment, as ``lovia.http_config`` describes (300 s, no proxies); ``default_headers``
    go with every request.
    """

    name = "anthropic"
    supports_json_schema = False
    supports_vision = True

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        max_tokens: int = 4096,
        timeout: float | None = None,
        trust_env: bool | None = None,
        extra_body: dict[str, Any] | None = None,
        default_headers: dict[str, str] | None = None,
        official_dialect: bool | None = None,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self._owns_client = client is None
        if client is None:
            client = sdk_client(
                "anthropic",
                "AsyncAnthropic",
                api_key=api_key,
                key_variable=_KEY,
                base_url=base_url,
                url_variable=_URL,
                timeout=timeout,
                trust_env=trust_env,
                default_headers=default_headers,
                token_variable="ANTHROPIC_AUTH_TOKEN",
            )
        self.client = client
        self._keys = KeyPolicy("anthropic", client, _KEY, self._owns_client, default_headers)
        official = self._keys.official_host
        self.official_dialect = official if official_dialect is None else official_dialect

    def request(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for this call."""
        system, messages = to_anthropic_messages(entries)
        req: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "stream": True,
        }
        if system:
            req["system"] = system
        if tools:
            req["tools"] = [
                {
                    "name": t["name"],
                    "description": t.get("description") or "",
                    "input_schema": t.get("parameters") or {"type": "object", "properties": {}},
                }
                for t in tools
            ]
        settings = with_extra_body(settings, self.extra_body)
        if settings is not None:
            _apply_settings(req, settings, has_tools=bool(tools))
        return req

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        """Stream one answer; whole entries come only after ``message_stop``.

        ``response_format`` is not sent (``supports_json_schema`` is False, so the run loop
        validates structured output itself).
        """
        import anthropic

        self.check_ready()
        req = self.request(entries, tools=tools, settings=settings)
        where = f"anthropic:{self.model}"
        answer = _Answer()
        events = guarded_stream(
            functools.partial(self.client.messages.create, **req, **self._keys.request_options),
            anthropic.APIError,
            lambda exc: _error(exc, where),
        )
        async with aclosing(events):
            async for event in events:
                for delta in answer.add(event):
                    yield delta
        if not answer.stopped:
            raise ProviderError(
                f"{where}: the stream ended before message_stop",
                hint="the connection was cut; a RetryPolicy on the agent retries such calls",
            )
        for entry in answer.entries():
            yield EntryCompletedDelta(entry)
        yield UsageDelta(answer.usage())
        yield FinishDelta(answer.finish_reason)


class _Answer:
    """Content blocks as they stream in, by index, plus usage and the stop reason."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.input_tokens = 0
        self.output_tokens = 0
        self.cache_read = 0
        self.cache_write = 0
        self.finish_reason: str | None = None
        self.stopped = False

    def add(self, event: Any) -> list[ModelDelta]:
        kind = event.type
        if kind == "message_start":
            self._usage(event.message.usage)
        elif kind == "content_block_start":
            return self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "message_delta":
            reason = event.delta.stop_reason
            if reason:
                self.finish_reason = _FINISH.get(reason, reason)
            if event.usage is not None:
                self._usage(event.usage)
        elif kind == "message_stop":
            self.stopped = True
        return []

    def _usage(self, u: Any) -> None:
        # message_delta repeats the counts cumulatively; a missing field keeps what we had.
        for attr, field in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read_input_tokens", "cache_read"),
            ("cache_creation_input_tokens", "cache_write"),
        ):
            value = getattr(u, attr, None)
            if value is not None:
                setattr(self, field, int(value))

    def _start(self, index: int, block: Any) -> list[ModelDelta]:
        kind = block.type
        if kind == "text":
            self.blocks[index] = {"type": "text", "text": block.text or ""}
            return [TextDelta(block.text)] if block.text else []
        if kind == "tool_use":
            self.blocks[index] = {
                "type": "tool_use",
                "id": block.id,
                "name": block.name,
                "json": "",
            }
            return [ToolCallDelta(index, call_id=block.id, name=block.name)]
        if kind == "thinking":
            self.blocks[index] = {
                "type": "thinking",
                "thinking": block.thinking or "",
                "signature": getattr(block, "signature", None) or "",
            }
            return []
        if kind == "redacted_thinking":
            self.blocks[index] = {"type": "redacted_thinking", "data": block.data}
        return []

    def _delta(self, index: int, delta: Any) -> list[ModelDelta]:
        block = self.blocks.get(index)
        if block is None:
            return []  # a block type lovia does not keep (server tools, citations, ...)
        kind = delta.type
        if kind == "text_delta":
            block["text"] += delta.text
            return [TextDelta(delta.text)]
        if kind == "input_json_delta":
            block["json"] += delta.partial_json
            return [ToolCallDelta(index, arguments=delta.partial_json)]
        if kind == "thinking_delta":
            block["thinking"] += delta.thinking
            return [ReasoningDelta(delta.thinking)]
        if kind == "signature_delta":
            block["signature"] += delta.signature
        return []

    def entries(self) -> list[TranscriptEntry]:
        out: list[TranscriptEntry] = []
        for index in sorted(self.blocks):
            b = self.blocks[index]
            if b["type"] == "text" and b["text"]:
                out.append(AssistantTextEntry(content=b["text"]))
            elif b["type"] == "tool_use":
                out.append(
                    ToolCallEntry(call_id=b["id"], name=b["name"], arguments=b["json"] or "{}")
                )
            elif b["type"] == "thinking":
                meta = {"signature": b["signature"]} if b["signature"] else {}
                out.append(
                    ReasoningEntry(content=b["thinking"], provider="anthropic", metadata=meta)
                )
            elif b["type"] == "redacted_thinking":
                out.append(
                    ReasoningEntry(
                        content="", provider="anthropic", metadata={"redacted": b["data"]}
                    )
                )
        return out

    def usage(self) -> Usage:
        # input_tokens is the whole prompt, cached parts included, as for every provider.
        return Usage(
            input_tokens=self.input_tokens + self.cache_read + self.cache_write,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read,
            cache_write_tokens=self.cache_write,
        )


def to_anthropic_messages(
    entries: Sequence[TranscriptEntry],
) -> tuple[str, list[dict[str, Any]]]:
    """The ``system`` text and the ``messages`` for ``entries``.

    Leading system entries become ``system``; a later system note becomes user text. Blocks
    of one role in a row share one message, so consecutive tool results go in one user
    message, as the API requires. Images and files become ``image`` / ``document`` blocks
    (a tool result carries text and images; a file there is described in text). Each entry is
    rendered once: a view that extends an earlier one reuses its messages (read-only).
    """
    n = leading_system_count(entries)
    system = "\n\n".join(e.text for e in entries[:n] if isinstance(e, InputEntry))
    return system, _MESSAGES.render(entries[n:])


def _render(
    entries: Sequence[TranscriptEntry], start: int, out: list[dict[str, Any]], marks: Marks
) -> None:
    for i in range(start, len(entries)):
        e = entries[i]
        role, blocks = _blocks(e)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            marks.append((i, len(out)))
            out.append({"role": role, "content": blocks})


_MESSAGES: BodyCache[dict[str, Any]] = BodyCache(_render)


def _blocks(e: TranscriptEntry) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(e, InputEntry):
        return ("assistant" if e.role == "assistant" else "user"), anthropic_blocks(e.content)
    if isinstance(e, AssistantTextEntry):
        # The API refuses empty text blocks.
        return "assistant", [{"type": "text", "text": e.content}] if e.content else []
    if isinstance(e, ToolCallEntry):
        return "assistant", [
            {"type": "tool_use", "id": e.call_id, "name": e.name, "input": _arguments(e.arguments)}
        ]
    if isinstance(e, ToolResultEntry):
        content: str | list[dict[str, Any]] = e.output
        if e.parts:
            content = anthropic_blocks(e.parts, in_tool_result=True) or e.output
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": e.call_id,
            "content": content,
        }
        if e.is_error:
            block["is_error"] = True
        return "user", [block]
    if e.provider == "anthropic" and e.metadata.get("signature"):
        return "assistant", [
            {"type": "thinking", "thinking": e.content, "signature": e.metadata["signature"]}
        ]
    if e.provider == "anthropic" and e.metadata.get("redacted"):
        return "assistant", [{"type": "redacted_thinking", "data": e.metadata["redacted"]}]
    # Reasoning without a signature (another provider's) cannot be verified by the API.
    return "assistant", []


def _arguments(raw: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(call_arguments(raw))
    return value


def _apply_settings(req: dict[str, Any], s: ModelSettings, *, has_tools: bool) -> None:
    if s.max_tokens is not None:
        req["max_tokens"] = s.max_tokens
    # Sampling goes in the JSON body directly: recent SDK releases dropped these keyword
    # arguments from messages.create while the API still reads them for models that take them.
    body: dict[str, Any] = {}
    if s.temperature is not None:
        body["temperature"] = s.temperature
    if s.top_p is not None:
        body["top_p"] = s.top_p
    body.update(s.extra_body)
    if has_tools and (s.tool_choice is not None or s.parallel_tool_calls is False):
        choice = s.tool_choice or "auto"
        name = tool_choice_name(choice)
        tc: dict[str, Any]
        if name is not None:
            tc = {"type": "tool", "name": name}
        else:
            tc = {"type": {"auto": "auto", "required": "any", "none": "none"}[choice]}
        if s.parallel_tool_calls is False and tc["type"] != "none":
            tc["disable_parallel_tool_use"] = True
        req["tool_choice"] = tc
    if body:
        req["extra_body"] = body


def _error(exc: Exception, where: str) -> ProviderError:
    import anthropic

    def on_status(exc: anthropic.APIStatusError) -> ProviderError:
        body = exc.body if isinstance(exc.body, dict) else {}
        inner = body.get("error")
        err: dict[str, Any] = inner if isinstance(inner, dict) else {}
        message = str(err.get("message") or exc.message)
        status = exc.status_code
        if status < 400:
            status = _EVENT_STATUS.get(str(err.get("type")), 500)
        return status_error(where, status, message, code=err.get("type"), key_variable=_KEY)

    return sdk_error(anthropic, exc, where, url_variable=_URL, on_status=on_status)
