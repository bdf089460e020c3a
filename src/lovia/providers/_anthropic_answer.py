"""Anthropic's event stream read into lovia's deltas and transcript entries."""

from __future__ import annotations

import json
from typing import Any

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

__all__ = ["Answer"]

# Anthropic's stop reasons in the words the rest of lovia uses (OpenAI's).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


class Answer:
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
            # Anthropic's own API starts with an empty input and streams it; some gateways put
            # the whole input here instead (kept unless deltas follow)
            given = getattr(block, "input", None)
            prefilled = json.dumps(given) if isinstance(given, dict) and given else ""
            self.blocks[index] = {
                "type": "tool_use",
                "id": block.id,
                "name": block.name,
                "json": "",
                "prefilled": prefilled,
            }
            return [ToolCallDelta(index, call_id=block.id, name=block.name, arguments=prefilled)]
        if kind == "thinking":
            self.blocks[index] = {
                "type": "thinking",
                "thinking": block.thinking or "",
                "signature": getattr(block, "signature", None) or "",
            }
            return [ReasoningDelta(block.thinking)] if block.thinking else []
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
                    ToolCallEntry(
                        call_id=b["id"],
                        name=b["name"],
                        arguments=b["json"] or b["prefilled"] or "{}",
                    )
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
