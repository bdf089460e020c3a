"""Reading a streamed Chat Completions answer: text, reasoning, tool-call fragments, usage."""

from __future__ import annotations

from typing import Any

from ..errors import ProviderError
from ..transcript import (
    AssistantTextEntry,
    ModelDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    TranscriptEntry,
)
from ..usage import Usage

__all__ = ["ChatAnswer"]


class ChatAnswer:
    """The answer as it streams in: text, reasoning, tool-call fragments, usage, finish."""

    def __init__(self, provider: str) -> None:
        self.provider = provider  # names the reasoning entries
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, list[str]] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    def add(self, chunk: Any) -> list[ModelDelta]:
        out: list[ModelDelta] = []
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue  # n > 1 is not something an agent asks for
            delta = choice.delta
            if delta is not None:
                out.extend(self._delta(delta))
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return out

    def add_raw(self, chunk: dict[str, Any]) -> list[ModelDelta]:
        """``add`` for a chunk as its JSON decodes (no SDK model built for it)."""
        out: list[ModelDelta] = []
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = _usage(_Fields(usage))
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                out.extend(self._delta(_Delta(delta)))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def _delta(self, delta: Any) -> list[ModelDelta]:
        out: list[ModelDelta] = []
        extra = delta.model_extra or {}
        # vLLM and DeepSeek say reasoning_content, OpenRouter and Ollama say reasoning.
        thought = extra.get("reasoning_content") or extra.get("reasoning")
        if isinstance(thought, str) and thought:
            self.reasoning.append(thought)
            out.append(ReasoningDelta(thought))
        if delta.content:
            self.text.append(delta.content)
            out.append(TextDelta(delta.content))
        for frag in delta.tool_calls or ():
            index = self._index_of(frag)
            slot = self.calls.setdefault(index, ["", "", ""])
            fn = frag.function
            name = (fn.name if fn is not None else None) or None
            args = (fn.arguments if fn is not None else None) or ""
            if frag.id:
                slot[0] = frag.id
            if name:
                # OpenAI sends the name once; a few servers repeat it in every fragment.
                slot[1] = name if slot[1] in ("", name) else slot[1] + name
            slot[2] += args
            out.append(ToolCallDelta(index, call_id=frag.id, name=name, arguments=args))
        return out

    def _index_of(self, frag: Any) -> int:
        """The call a fragment belongs to. Gateways that send whole calls may leave out the
        ``index`` (or send null): a new id then opens the next call, and a fragment without
        an id continues the latest one."""
        if isinstance(frag.index, int):
            return frag.index
        if frag.id:
            known = [i for i, slot in self.calls.items() if slot[0] == frag.id]
            return known[0] if known else max(self.calls, default=-1) + 1
        return max(self.calls, default=0)

    def entries(self) -> list[TranscriptEntry]:
        out: list[TranscriptEntry] = []
        if self.reasoning:
            out.append(ReasoningEntry(content="".join(self.reasoning), provider=self.provider))
        if self.text:
            out.append(AssistantTextEntry(content="".join(self.text)))
        for index in sorted(self.calls):
            call_id, name, arguments = self.calls[index]
            if not name:
                raise ProviderError(f"the model sent a tool call (index {index}) with no name")
            out.append(
                ToolCallEntry(
                    call_id=call_id or f"call_{index}", name=name, arguments=arguments or "{}"
                )
            )
        return out


def _usage(raw: Any) -> Usage:
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    # input_tokens is the whole prompt, cached part included (OpenAI's convention, kept for
    # every provider so the context policy reads one meaning).
    return Usage(
        input_tokens=int(raw.prompt_tokens or 0),
        output_tokens=int(raw.completion_tokens or 0),
        cache_read_tokens=int(cached or 0),
    )


class _Fields:
    """A decoded JSON object read as the SDK's models are (``obj.field``; missing: None)."""

    __slots__ = ("_d",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._d = data

    def __getattr__(self, name: str) -> Any:
        value = self._d.get(name)
        return _Fields(value) if isinstance(value, dict) else value


_DELTA_FIELDS = frozenset(("role", "content", "tool_calls", "function_call", "refusal"))


class _Delta(_Fields):
    """A choice's delta: its tool-call fragments as objects, unknown keys in ``model_extra``."""

    __slots__ = ()

    @property
    def model_extra(self) -> dict[str, Any]:
        return {k: v for k, v in self._d.items() if k not in _DELTA_FIELDS}

    @property
    def tool_calls(self) -> list[Any] | None:
        calls = self._d.get("tool_calls")
        return None if not calls else [_Fields(c) for c in calls if isinstance(c, dict)]
