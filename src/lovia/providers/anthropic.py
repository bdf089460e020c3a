"""Anthropic's Messages API, streamed.

::

    model = AnthropicProvider("claude-sonnet-4-5")               # ANTHROPIC_API_KEY
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError, UserError
from ..transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    InputEntry,
    ModelDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UsageDelta,
    call_arguments,
    leading_system_count,
)
from ._anthropic_answer import Answer
from ._common import (
    KeyPolicy,
    SDKClientPlan,
    SDKProvider,
    drop_removed,
    function_fields,
    guarded_stream,
    named_by,
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
DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_MAX_TOKENS = 16_384
"""Sent as ``max_tokens`` when ``ModelSettings.max_tokens`` is unset (the API requires it)."""

# Errors sent as an SSE event arrive with HTTP 200; their type says what really happened.
_EVENT_STATUS = {
    "overloaded_error": 529,
    "api_error": 500,
    "rate_limit_error": 429,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
}


def _with_key_header(api_key: str | None, headers: dict[str, str] | None) -> dict[str, str] | None:
    """The key also as ``x-api-key``, the header Anthropic's API reference names: the SDK
    sends it as a bearer token only, which gateways and servers that speak the documented
    protocol refuse. A credential header of the caller's own is left as given."""
    key = api_key if api_key is not None else os.environ.get(_KEY)
    own = {k.lower() for k in headers or {}}
    if not key or own & {"x-api-key", "authorization"}:
        return headers
    return {**(headers or {}), "x-api-key": key}


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
    ``ModelSettings.extra_body`` wins key by key.

    The base URL ends in ``/v1`` (default ``https://api.anthropic.com/v1``) and requests go
    to ``<base>/messages``; a base URL without ``/v1`` gets ``/v1/messages``, as the Anthropic
    SDK does. When ``ModelSettings.max_tokens`` is unset, ``default_max_tokens`` (16384) is
    sent. Structured output goes natively (``output_config``, ``supports_json_schema``
    true). Images in user input are always sent; images a tool returned are sent when
    ``supports_vision`` is true: by default on Anthropic's own API only, since a compatible
    server may run a text-only model (elsewhere the model reads the result's text).

    ``timeout`` (seconds) and ``trust_env`` (honour proxy variables) fall back to the
    environment, as ``lovia.http_config`` describes (300 s, no proxies); ``default_headers``
    go with every request. ``anthropic_version`` sets the ``anthropic-version`` header (the
    SDK's own by default).
    """

    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        max_tokens: int | None = None,
        timeout: float | None = None,
        trust_env: bool | None = None,
        extra_body: dict[str, Any] | None = None,
        default_headers: dict[str, str] | None = None,
        official_dialect: bool | None = None,
        supports_vision: bool | None = None,
        supports_json_schema: bool = True,
        anthropic_version: str | None = None,
    ) -> None:
        self.model = model
        if anthropic_version is not None:  # 0.9.119's keyword: the API version header
            default_headers = {"anthropic-version": anthropic_version, **(default_headers or {})}
        self.max_tokens = default_max_tokens if max_tokens is None else max_tokens
        self.extra_body = dict(extra_body or {})
        self.supports_json_schema = supports_json_schema
        self._base_url: str | None = None
        if client is None:  # built, and the SDK imported, at the first call
            self._base_url = (base_url or os.environ.get(_URL) or DEFAULT_BASE_URL).rstrip("/")
            self._plan = SDKClientPlan(
                "anthropic",
                "AsyncAnthropic",
                api_key=api_key,
                key_variable=_KEY,
                base_url=_sdk_base(self._base_url),
                url_variable=_URL,
                default_url=DEFAULT_BASE_URL,
                timeout=timeout,
                trust_env=trust_env,
                default_headers=_with_key_header(api_key, default_headers),
                token_variable="ANTHROPIC_AUTH_TOKEN",
            )
        self._client = client
        self._keys = KeyPolicy("anthropic", client, _KEY, self._plan, default_headers)
        official = self._keys.official_host
        self.official_dialect = official if official_dialect is None else official_dialect
        self.supports_vision = official if supports_vision is None else supports_vision

    @property
    def base_url(self) -> str:
        """The base URL as configured (requests go to ``<base>/messages``)."""
        if self._base_url is not None:
            return self._base_url
        return super().base_url

    def request(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for this call."""
        system, messages = to_anthropic_messages(entries, include_images=self.supports_vision)
        req: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "stream": True,
        }
        if system:
            req["system"] = system
        if tools:
            req["tools"] = []
            for t in tools:
                fn = function_fields(t)
                fn["input_schema"] = fn.pop("parameters")
                req["tools"].append(fn)
        settings = with_extra_body(settings, self.extra_body, ("anthropic", "claude"))
        if settings is not None:
            _apply_settings(req, settings, has_tools=bool(tools))
        _add_output_config(req, response_format)
        drop_removed(req)
        extra = req.get("extra_body") or {}
        cache = extra.pop("cache_system", False)  # ours, not the API's
        ttl = extra.pop("cache_ttl", None)  # ours too: a TTL asks for the cache as well
        if ttl is not None:
            if not isinstance(ttl, str) or ttl not in _CACHE_TTLS:
                raise UserError(
                    f"Unsupported Anthropic cache_ttl {ttl!r}",
                    hint='use "5m" (the API\'s default) or "1h"',
                )
            cache = True
        if cache:
            _cache_breakpoints(req, _CACHE_TTLS[ttl] if ttl is not None else _EPHEMERAL)
        if req.get("extra_body") == {}:
            del req["extra_body"]
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

        A JSON-schema ``response_format`` goes as ``output_config.format``.
        """
        import anthropic

        self.check_ready()
        req = self.request(entries, tools=tools, response_format=response_format, settings=settings)
        where = f"anthropic:{self.model}"
        answer = Answer()
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
                retryable=True,
                **named_by(where),
            )
        for entry in answer.entries():
            yield EntryCompletedDelta(entry)
        yield UsageDelta(answer.usage())
        yield FinishDelta(answer.finish_reason)


def to_anthropic_messages(
    entries: Sequence[TranscriptEntry], *, include_images: bool = True
) -> tuple[str, list[dict[str, Any]]]:
    """The ``system`` text and the ``messages`` for ``entries``.

    Leading system entries become ``system``; a later system note becomes user text. Blocks
    of one role in a row share one message, so consecutive tool results go in one user
    message, as the API requires. Images and files become ``image`` / ``document`` blocks
    (a tool result carries text and images, unless ``include_images`` is false; a file there
    is described in text). Each entry is rendered once: a view that extends an earlier one
    reuses its messages (read-only).
    """
    n = leading_system_count(entries)
    system = "\n\n".join(e.text for e in entries[:n] if isinstance(e, InputEntry))
    cache = _MESSAGES if include_images else _TEXT_MESSAGES
    return system, cache.render(entries[n:])


def _render(
    entries: Sequence[TranscriptEntry],
    start: int,
    out: list[dict[str, Any]],
    marks: Marks,
    *,
    images: bool = True,
) -> None:
    for i in range(start, len(entries)):
        e = entries[i]
        role, blocks = _blocks(e, images)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            marks.append((i, len(out)))
            out.append({"role": role, "content": blocks})


_MESSAGES: BodyCache[dict[str, Any]] = BodyCache(_render)
_TEXT_MESSAGES: BodyCache[dict[str, Any]] = BodyCache(functools.partial(_render, images=False))


def _blocks(e: TranscriptEntry, images: bool = True) -> tuple[str, list[dict[str, Any]]]:
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
        if e.parts and images:
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
    if s.stop is not None:
        req["stop_sequences"] = list(s.stop)
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


_EPHEMERAL = {"type": "ephemeral"}
# ModelSettings(extra_body={"cache_ttl": ...}): the cache_control of each breakpoint
_CACHE_TTLS: dict[str, dict[str, str]] = {
    "5m": _EPHEMERAL,
    "1h": {"type": "ephemeral", "ttl": "1h"},
}


def _cache_breakpoints(req: dict[str, Any], mark: dict[str, str] = _EPHEMERAL) -> None:
    """Mark the last tool, the system prompt and the last stable block of the conversation (a
    tool result or the model's own words, never the new user text after them) for Anthropic's
    prompt cache. The rendered messages are shared, so marked ones are copies. ``mark`` is the
    ``cache_control`` value (with a ``ttl`` for the one-hour cache)."""
    if req.get("tools"):
        req["tools"] = [*req["tools"][:-1], {**req["tools"][-1], "cache_control": mark}]
    if req.get("system"):
        req["system"] = [{"type": "text", "text": req["system"], "cache_control": mark}]
    messages = req["messages"]
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = message.get("content")
        if isinstance(content, str) and message.get("role") == "assistant":
            content = [{"type": "text", "text": content}]
        for j in range(len(content) - 1, -1, -1) if isinstance(content, list) else ():
            block = content[j]
            kind = block.get("type")
            if kind in ("thinking", "redacted_thinking"):
                continue
            if message.get("role") == "assistant" or kind == "tool_result":
                blocks = [*content[:j], {**block, "cache_control": mark}, *content[j + 1 :]]
                marked = {**message, "content": blocks}
                req["messages"] = [*messages[:i], marked, *messages[i + 1 :]]
                return


def _add_output_config(req: dict[str, Any], response_format: dict[str, Any] | None) -> None:
    """A JSON-schema ``response_format`` as ``output_config.format``; an ``output_config``
    in the extra body (an ``effort``, say) joins it, its keys winning."""
    spec = (response_format or {}).get("json_schema")
    if (response_format or {}).get("type") != "json_schema" or not isinstance(spec, dict):
        return
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        return
    own = {"format": {"type": "json_schema", "schema": schema}}
    extra = req.get("extra_body") or {}
    if "output_config" not in extra:
        req["output_config"] = own
    elif isinstance(extra["output_config"], dict):
        extra["output_config"] = {**own, **extra["output_config"]}


def _sdk_base(base_url: str) -> str:
    """The SDK adds ``/v1/messages`` to its base; a base that ends in ``/v1`` loses it."""
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


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
