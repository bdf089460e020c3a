"""The OpenAI Chat Completions provider under the module path lovia 0.9.119 used.

``OpenAIChatProvider`` lives in ``lovia.providers.openai``; the two functions here show the
messages it sends, for tests and debugging.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..messages import Message
from ..transcript import TranscriptEntry, messages_to_entries
from ._parts import openai_content
from .openai import OpenAIChatProvider, to_chat_messages

__all__ = ["OpenAIChatProvider", "entries_to_openai_messages", "message_to_openai"]


def entries_to_openai_messages(
    entries: Iterable[TranscriptEntry],
    *,
    reasoning_provider: str = "openai-chat",
    include_reasoning: bool = True,
    include_images: bool = False,
) -> list[dict[str, Any]]:
    """The Chat Completions ``messages`` for ``entries``, as ``OpenAIChatProvider`` sends them.

    ``include_reasoning`` sends the reasoning ``reasoning_provider`` wrote back as
    ``reasoning_content`` (another provider's is left out); ``include_images``
    sends the images tool results returned (in a user message after the turn's tool
    messages). The returned dicts are fresh copies.
    """
    view: Sequence[TranscriptEntry] = list(entries)
    rendered = to_chat_messages(
        view,
        send_reasoning=include_reasoning,
        result_images=include_images,
        reasoning_from=reasoning_provider,
    )
    return [_copy(m) for m in rendered]


def message_to_openai(message: Message) -> dict[str, Any]:
    """One ``Message`` as a Chat Completions message (text, content parts, tool calls)."""
    out = entries_to_openai_messages(messages_to_entries([message]))
    if not out and message.role == "assistant":  # no text and no calls: an empty message
        out = [{"role": "assistant"}]
    if len(out) != 1:  # pragma: no cover - one message renders as one
        raise ValueError(f"{message.role!r} message rendered as {len(out)} messages")
    if message.role == "assistant" and message.content is not None:
        out[0]["content"] = openai_content(message.content)  # its parts (and ""), as given
    if message.name is not None and message.role in ("user", "assistant"):
        out[0]["name"] = message.name
    return out[0]


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
