"""OpenAI Chat Completions, and every server that speaks it (vLLM, Ollama, LM Studio, ...).

::

    model = OpenAIChatProvider("gpt-4.1")                       # OPENAI_API_KEY
    local = OpenAIChatProvider("qwen3", base_url="http://127.0.0.1:8000/v1", api_key="local")
"""

from __future__ import annotations

import functools
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
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UsageDelta,
    call_arguments,
)
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
from ._openai_answer import ChatAnswer
from ._openai_stream import raw_chunks
from ._parts import joined_content, openai_content, openai_result_images
from ._render import BodyCache, Marks, Renderer
from .base import ToolSpec

if TYPE_CHECKING:
    from ..settings import ModelSettings


__all__ = ["OpenAIChatProvider", "to_chat_messages"]

_KEY = "OPENAI_API_KEY"
_URL = "OPENAI_BASE_URL"
_DEFAULT_URL = "https://api.openai.com/v1"  # the SDK's own


class OpenAIChatProvider(SDKProvider):
    """A model behind an OpenAI-compatible Chat Completions endpoint, streamed.

    The key comes from ``api_key`` or ``OPENAI_API_KEY``, the URL from ``base_url`` or
    ``OPENAI_BASE_URL`` (default: OpenAI). A key is needed only by OpenAI's own API: without
    one a call there is a ``UserError`` before anything is sent (``check_ready()`` asks
    early); any other server is asked without an ``Authorization`` header. Pass ``client`` to use an
    ``openai.AsyncOpenAI`` you configured yourself (its retries are yours then).
    ``send_reasoning=True`` sends earlier reasoning back as ``reasoning_content``, for servers
    that want it (DeepSeek's thinking mode with tools); by default it is dropped.
    The dialect follows the host: api.openai.com gets ``max_completion_tokens`` and structured
    output as a native ``response_format`` JSON schema; other servers get ``max_tokens``, and
    structured output is asked for in the instructions unless ``supports_json_schema=True``.
    ``max_tokens_param`` overrides the name.

    Images and files in user input are sent as content parts. Images a tool returned are
    sent (in a user message after the tool messages) when ``supports_vision`` is true: by
    default on api.openai.com only, since many compatible servers run text-only models;
    elsewhere the model reads the result's text, which names each image.

    ``extra_body`` holds raw request fields this endpoint always needs (a server's template
    switches, a reasoning effort); an agent's ``ModelSettings.extra_body`` wins key by key.

    ``timeout`` (seconds) and ``trust_env`` (honour proxy variables) fall back to the
    environment, as ``lovia.http_config`` describes (300 s, no proxies); ``default_headers``
    go with every request. ``official_dialect`` says whether the server speaks OpenAI's own
    dialect (``max_completion_tokens``, native JSON schema) when its host does not tell (a
    proxy in front of OpenAI); the key and ``supports_vision`` still follow the real host.
    ``replay_reasoning`` is another name for ``send_reasoning``.
    """

    name = "openai-chat"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        timeout: float | None = None,
        trust_env: bool | None = None,
        supports_json_schema: bool | None = None,
        send_reasoning: bool = False,
        max_tokens_param: str | None = None,
        supports_vision: bool | None = None,
        extra_body: dict[str, Any] | None = None,
        default_headers: dict[str, str] | None = None,
        replay_reasoning: bool | None = None,
        official_dialect: bool | None = None,
    ) -> None:
        self.model = model
        self.extra_body = dict(extra_body or {})
        self.send_reasoning = send_reasoning if replay_reasoning is None else replay_reasoning
        if client is None:  # built, and the SDK imported, at the first call
            self._plan = SDKClientPlan(
                "openai",
                "AsyncOpenAI",
                api_key=api_key,
                key_variable=_KEY,
                base_url=base_url,
                url_variable=_URL,
                default_url=_DEFAULT_URL,
                timeout=timeout,
                trust_env=trust_env,
                default_headers=default_headers,
            )
        self._client = client
        self._keys = KeyPolicy("openai", client, _KEY, self._plan, default_headers)
        # OpenAI's own API wants max_completion_tokens (reasoning models refuse max_tokens)
        # and enforces a JSON schema natively; the compatible servers read max_tokens, and
        # many ignore or refuse response_format, so structured output goes by the prompt.
        official = self._keys.official_host if official_dialect is None else official_dialect
        self.official_dialect = official
        self.max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if official else "max_tokens"
        )
        self.supports_json_schema = (
            official if supports_json_schema is None else supports_json_schema
        )
        # Vision is a property of the model behind the host, not of the request shape: by
        # default only OpenAI's own API is known to serve models that see.
        seeing = self._keys.official_host
        self.supports_vision = seeing if supports_vision is None else supports_vision

    def request(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for this call."""
        req: dict[str, Any] = {
            "model": self.model,
            "messages": to_chat_messages(
                entries,
                send_reasoning=self.send_reasoning,
                result_images=self.supports_vision,
                reasoning_from=self.name,
            ),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            req["tools"] = [{"type": "function", "function": function_fields(t)} for t in tools]
        if response_format is not None:
            req["response_format"] = response_format
        settings = with_extra_body(settings, self.extra_body, ("openai", "openai-chat"))
        if settings is not None:
            _apply_settings(req, settings, has_tools=bool(tools))
            if "max_tokens" in req and self.max_tokens_param != "max_tokens":
                req[self.max_tokens_param] = req.pop("max_tokens")
            drop_removed(req)
        return req

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        """Stream one answer; whole entries come only after the server finished properly."""
        import openai

        self.check_ready()
        req = self.request(entries, tools=tools, response_format=response_format, settings=settings)
        where = f"openai:{self.model}"
        answer = ChatAnswer(self.name)
        done = False  # the server's [DONE]: the answer is whole even without a finish_reason
        if self._plan is not None:
            # our own client: its stream read as JSON, without the SDK's model of each chunk
            # (most of a streamed answer's CPU time; issue 30's fifty chats at once)
            raw = raw_chunks(
                self.client,
                {**req, **self._keys.request_options},
                where,
                lambda exc: _error(exc, where),
            )
            async with aclosing(raw):
                async for data in raw:
                    if data is None:
                        done = True
                        continue
                    for delta in answer.add_raw(data):
                        yield delta
        else:
            chunks = guarded_stream(
                functools.partial(
                    self.client.chat.completions.create, **req, **self._keys.request_options
                ),
                openai.APIError,
                lambda exc: _error(exc, where),
            )
            async with aclosing(chunks):
                async for chunk in chunks:
                    for delta in answer.add(chunk):
                        yield delta
        if answer.finish_reason is None and not done:
            raise ProviderError(
                f"{where}: the stream ended before the model finished its answer",
                hint="the connection was cut; a RetryPolicy on the agent retries such calls",
                retryable=True,
                **named_by(where),
            )
        for entry in answer.entries():
            yield EntryCompletedDelta(entry)
        if answer.usage is not None:
            yield UsageDelta(answer.usage)
        yield FinishDelta(answer.finish_reason)


def to_chat_messages(
    entries: Sequence[TranscriptEntry],
    *,
    send_reasoning: bool = False,
    result_images: bool = True,
    reasoning_from: str = "openai-chat",
) -> list[dict[str, Any]]:
    """Chat Completions messages for ``entries``.

    Consecutive assistant text and tool calls become one assistant message with
    ``tool_calls``; each result becomes a ``tool`` message with its ``tool_call_id``. Parts
    become ``image_url`` / ``file`` content parts. A ``tool`` message is text only, so the
    images a tool returned (``result_images``) follow the turn's tool messages in one user
    message. Each entry is rendered once: a view that extends an earlier one reuses its
    messages (treat them as read-only). Adjacent user (or system) entries become one message.
    Only the reasoning ``reasoning_from`` (the provider's name) wrote is sent back.
    """
    reasoning = reasoning_from if send_reasoning else None
    key = (reasoning, result_images)
    cache = _CACHES.get(key)
    if cache is None:
        cache = _CACHES[key] = BodyCache(_renderer(reasoning, result_images))
    return cache.render(entries)


_CACHES: dict[tuple[str | None, bool], BodyCache[dict[str, Any]]] = {}


def _renderer(reasoning: str | None, result_images: bool) -> Renderer[dict[str, Any]]:
    def render(
        entries: Sequence[TranscriptEntry], start: int, out: list[dict[str, Any]], marks: Marks
    ) -> None:
        _Render(out, reasoning).run(entries, start, marks, result_images)

    return render


class _Render:
    """One pass of the renderer: the model turn and the result images being collected."""

    def __init__(self, out: list[dict[str, Any]], reasoning: str | None) -> None:
        self.out = out
        self.reasoning = reasoning  # whose reasoning is sent back (None: nobody's)
        self.turn: list[TranscriptEntry] = []  # the assistant entries of one model turn
        self.images: list[dict[str, Any]] = []  # the images of this turn's tool results

    def run(
        self, entries: Sequence[TranscriptEntry], start: int, marks: Marks, result_images: bool
    ) -> None:
        out = self.out
        for i in range(start, len(entries)):
            e = entries[i]
            kind = type(e)
            if kind is ToolResultEntry:
                assert isinstance(e, ToolResultEntry)
                self.flush_turn()
                if not self.images:
                    marks.append((i, len(out)))
                content = e.output
                if result_images and e.parts:
                    found = openai_result_images(e.call_id, e.parts)
                    if found:
                        content += "\n[the image(s) of this result follow in a user message]"
                        self.images.extend(found)
                out.append({"role": "tool", "tool_call_id": e.call_id, "content": content})
                continue
            self.flush_images()
            if kind is InputEntry:
                assert isinstance(e, InputEntry)
                self.flush_turn()
                wire = e.text if e.role == "system" else openai_content(e.content)
                last = out[-1] if out else {}
                mergeable = e.role in ("user", "system") and last.keys() == {"role", "content"}
                if mergeable and last["role"] == e.role:
                    # a new dict: the one there may be shared with a cached rendering
                    out[-1] = {"role": e.role, "content": joined_content(last["content"], wire)}
                    while marks and marks[-1][1] >= len(out):  # (a turn that rendered nothing)
                        marks.pop()  # a restart there would reuse the message merged into
                    continue  # no mark: this entry's text is in a message begun before it
                marks.append((i, len(out)))
                out.append({"role": e.role, "content": wire})
                continue
            if not self.turn:
                marks.append((i, len(out)))
            self.turn.append(e)
        self.flush_images()
        self.flush_turn()

    def flush_turn(self) -> None:
        if self.turn:
            message = _assistant_message(self.turn, self.reasoning)
            if message is not None:
                self.out.append(message)
            self.turn = []

    def flush_images(self) -> None:
        if self.images:
            self.out.append({"role": "user", "content": self.images})
            self.images = []


def _assistant_message(
    turn: list[TranscriptEntry], reasoning_from: str | None
) -> dict[str, Any] | None:
    text: str | None = None
    reasoning: str | None = None
    calls: list[dict[str, Any]] = []
    for e in turn:
        if isinstance(e, AssistantTextEntry):
            text = e.content if text is None else text + e.content
        elif isinstance(e, ToolCallEntry):
            calls.append(
                {
                    "id": e.call_id,
                    "type": "function",
                    "function": {"name": e.name, "arguments": call_arguments(e.arguments)},
                }
            )
        elif isinstance(e, ReasoningEntry) and reasoning_from and e.provider == reasoning_from:
            reasoning = e.content if reasoning is None else reasoning + e.content
    if text is None and not calls:
        return None  # only reasoning (dropped, or alone): an empty assistant message is refused
    # A turn of calls alone carries no content field (the API takes it as optional there,
    # and 0.9.119 left it out); some compatible servers refuse a null one.
    message: dict[str, Any] = (
        {"role": "assistant"} if text is None else {"role": "assistant", "content": text}
    )
    if calls:
        message["tool_calls"] = calls
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return message


def _apply_settings(req: dict[str, Any], s: ModelSettings, *, has_tools: bool) -> None:
    for field in ("temperature", "max_tokens", "top_p"):
        value = getattr(s, field)
        if value is not None:
            req[field] = value
    if s.tool_choice is not None and has_tools:
        name = tool_choice_name(s.tool_choice)
        req["tool_choice"] = (
            s.tool_choice if name is None else {"type": "function", "function": {"name": name}}
        )
    # OpenAI rejects parallel_tool_calls on a request without tools.
    if s.parallel_tool_calls is not None and has_tools:
        req["parallel_tool_calls"] = s.parallel_tool_calls
    if s.stop is not None:
        req["stop"] = list(s.stop)
    if s.extra_body:
        req["extra_body"] = dict(s.extra_body)


def _error(exc: Exception, where: str) -> ProviderError:
    import openai

    def on_status(exc: openai.APIStatusError) -> ProviderError:
        body = exc.body if isinstance(exc.body, dict) else {}
        message = str(body.get("message") or exc.message)
        return status_error(
            where, exc.status_code, message, code=getattr(exc, "code", None), key_variable=_KEY
        )

    return sdk_error(openai, exc, where, url_variable=_URL, on_status=on_status)
