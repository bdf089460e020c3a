"""Estimate how many tokens text costs, fast and without a tokenizer.

``chars / 4`` is right for English and badly wrong for Chinese or Japanese, where one
character is usually a whole token. The estimate here uses UTF-8 bytes instead:
``(3 * bytes - chars) / 8`` gives 1/4 token per ASCII character, 1 token per CJK character
(3 bytes) and 5/8 per two-byte character (Cyrillic, Greek, accented Latin). The compaction
policy then scales it by the ratio the provider's reported input tokens revealed.
"""

from __future__ import annotations

from ..transcript import InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry

__all__ = ["MESSAGE_OVERHEAD", "entry_tokens", "estimate_tokens"]

MESSAGE_OVERHEAD = 4
"""Tokens a provider spends on one message's framing (role, separators)."""


def estimate_tokens(text: str) -> int:
    """Roughly how many tokens ``text`` costs (never 0 for non-empty text)."""
    if not text:
        return 0
    chars = len(text)
    if text.isascii():  # the common case, without encoding
        return (chars + 3) // 4
    size = len(text.encode("utf-8", "surrogatepass"))
    return (3 * size - chars + 7) // 8


def entry_tokens(entry: TranscriptEntry) -> int:
    """The estimated cost of one entry as a message, framing included."""
    if isinstance(entry, ToolResultEntry):
        body = estimate_tokens(entry.output)
    elif isinstance(entry, ToolCallEntry):
        body = estimate_tokens(entry.name) + estimate_tokens(entry.arguments)
    elif isinstance(entry, InputEntry):
        body = estimate_tokens(entry.text)
    else:
        body = estimate_tokens(entry.content)
    return body + MESSAGE_OVERHEAD
