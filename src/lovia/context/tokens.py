"""Estimate how many tokens text costs, fast and without a tokenizer.

``chars / 4`` is right for English and badly wrong for Chinese or Japanese, where one
character is usually a whole token. The estimate here uses UTF-8 bytes instead:
``(3 * bytes - chars) / 8`` gives 1/4 token per ASCII character, 1 token per CJK character
(3 bytes) and 5/8 per two-byte character (Cyrillic, Greek, accented Latin). The compaction
policy then scales it by the ratio the provider's reported input tokens revealed.
"""

from __future__ import annotations

import json
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import UserError
from ..parts import FilePart, TextPart
from ..transcript import InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry

__all__ = [
    "MESSAGE_OVERHEAD",
    "InvalidBudget",
    "TokenBudget",
    "TokenCounter",
    "TokenEstimator",
    "entry_tokens",
    "estimate_tokens",
    "usable_tokens",
]

MESSAGE_OVERHEAD = 8
"""Tokens a provider spends on one message's framing (role, separators)."""
IMAGE_TOKENS = 1_600
"""The flat estimate for one image part."""
FILE_TOKENS = 1_600
"""The flat estimate for one file part."""


def estimate_tokens(text: str) -> int:
    """Roughly how many tokens ``text`` costs (never 0 for non-empty text)."""
    if not text:
        return 0
    chars = len(text)
    if text.isascii():  # the common case, without encoding
        return (chars + 3) // 4
    size = len(text.encode("utf-8", "surrogatepass"))
    return (3 * size - chars + 7) // 8


def entry_tokens(
    entry: TranscriptEntry,
    *,
    overhead: int = MESSAGE_OVERHEAD,
    image_tokens: int = IMAGE_TOKENS,
    file_tokens: int = FILE_TOKENS,
) -> int:
    """The estimated cost of one entry as a message, framing included.

    Images and files cost a flat amount each (their bytes are not text the model reads);
    a tool result with parts is sent as those parts.
    """
    parts: Sequence[object] | None = None
    if isinstance(entry, ToolResultEntry):
        parts = entry.parts
        body = 0 if parts else estimate_tokens(entry.output)
    elif isinstance(entry, ToolCallEntry):
        body = estimate_tokens(entry.name) + estimate_tokens(entry.arguments)
    elif isinstance(entry, InputEntry):
        content = entry.content
        parts = None if isinstance(content, str) else content
        body = 0 if parts is not None else estimate_tokens(entry.text)
    else:
        body = estimate_tokens(entry.content)
    for part in parts or ():
        if isinstance(part, TextPart):
            body += estimate_tokens(part.text)
        else:
            body += file_tokens if isinstance(part, FilePart) else image_tokens
    return body + overhead


class InvalidBudget(UserError, ValueError):
    """Impossible window or watermark settings (also a ``ValueError``, as in 0.9.119)."""


def usable_tokens(window: int, reserve_output: int) -> int:
    """The prompt tokens ``window`` leaves after ``reserve_output`` for the reply.

    A reserve that does not fit (a small local model under the default reserve) takes
    half the window instead; the result is never below 1.
    """
    if reserve_output >= window:
        return max(window // 2, 1)
    return window - reserve_output


def _check_mark(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidBudget(
            f"{name} must be a fraction or a token count, got {value!r}",
            hint=f"e.g. {name}=0.85 (of the usable window) or {name}=150_000 (tokens)",
        )
    if isinstance(value, float) and not 0 < value <= 1:
        raise InvalidBudget(
            f"{name} as a fraction must be in (0, 1], got {value}",
            hint="a float is a fraction of the usable window; pass an int for tokens",
        )
    if isinstance(value, int) and value < 1:
        raise InvalidBudget(
            f"{name} as a token count must be >= 1, got {value}",
            hint="a float in (0, 1] is a fraction of the usable window",
        )


@dataclass(frozen=True)
class TokenBudget:
    """When to compact and down to what, over a model's context window.

    ``trigger`` and ``target`` are each a fraction of the usable window (a float) or a
    token count (an int); the target always resolves below the trigger.
    """

    window: int
    reserve_output: int = 16_384
    trigger: int | float = 0.85
    target: int | float = 0.60

    def __post_init__(self) -> None:
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
            raise InvalidBudget(
                f"window must be >= 1 token, got {self.window!r}",
                hint="pass the model's context window in tokens",
            )
        if self.reserve_output < 0:
            raise InvalidBudget(
                f"reserve_output must be >= 0, got {self.reserve_output}",
                hint="the tokens kept free for the reply, e.g. 16_384",
            )
        _check_mark(self.trigger, "trigger")
        _check_mark(self.target, "target")
        if type(self.trigger) is type(self.target) and self.target >= self.trigger:
            raise InvalidBudget(
                f"target {self.target} must be below trigger {self.trigger}",
                hint="e.g. trigger (compact_at) 0.85 and target (compact_to) 0.60",
            )

    @property
    def usable(self) -> int:
        """Prompt tokens left after the reply's reserve."""
        return usable_tokens(self.window, self.reserve_output)

    def _tokens(self, mark: int | float) -> int:
        if isinstance(mark, float):
            return max(1, int(mark * self.usable))
        return max(1, min(mark, self.usable))

    @property
    def trigger_tokens(self) -> int:
        """The prompt size above which compaction starts."""
        return self._tokens(self.trigger)

    @property
    def target_tokens(self) -> int:
        """The prompt size compaction shrinks to (always below the trigger)."""
        return min(self._tokens(self.target), max(1, self.trigger_tokens - 1))

    def pressure(self, tokens: int) -> float:
        """``tokens`` as a fraction of the usable window."""
        return tokens / self.usable


class TokenEstimator(Protocol):
    """A provider that can count exactly: ``estimate_tokens(entries) -> int``."""

    def estimate_tokens(self, entries: Sequence[TranscriptEntry]) -> int: ...


class TokenCounter:
    """Counts entries and tool schemas with the estimate above, remembering recent entries.

    ``estimator`` (a provider with ``estimate_tokens``) counts instead when given; if it
    raises, the estimate is used. Counts are remembered by entry identity (a dropped
    entry's reused ``id`` is never trusted), least recently used first out; a ``count`` of a
    longer transcript grows the memory to fit it.
    """

    def __init__(
        self,
        estimator: TokenEstimator | None = None,
        *,
        image_tokens: int = IMAGE_TOKENS,
        file_tokens: int = FILE_TOKENS,
        entry_overhead: int = MESSAGE_OVERHEAD,
        memo_size: int = 8_192,
    ) -> None:
        self._estimator = estimator
        self.image_tokens = image_tokens
        self.file_tokens = file_tokens
        self.entry_overhead = entry_overhead
        self._memo_size = self._entry_memo_size = memo_size
        self._memo: OrderedDict[int, tuple[Any, int]] = OrderedDict()
        self._tool_memo: OrderedDict[int, tuple[Any, int]] = OrderedDict()

    def count(self, entries: Sequence[TranscriptEntry]) -> int:
        """The estimate of all ``entries``."""
        self._entry_memo_size = max(self._entry_memo_size, len(entries))
        return sum(self.count_entry(e) for e in entries)

    def count_text(self, text: str) -> int:
        """The estimate of one message carrying ``text``."""
        return estimate_tokens(text) + self.entry_overhead

    def count_entry(self, entry: TranscriptEntry) -> int:
        """The estimate of one entry (remembered)."""
        return _remembered(self._memo, self._entry_memo_size, entry, self._measure)

    def count_tools(self, tools: Sequence[object]) -> int:
        """The estimate of the tool schemas sent with a call (compact JSON of each)."""
        return sum(_remembered(self._tool_memo, self._memo_size, t, self._schema) for t in tools)

    def _measure(self, entry: TranscriptEntry) -> int:
        if self._estimator is not None:
            try:
                return int(self._estimator.estimate_tokens([entry]))
            except Exception:  # a broken tokenizer must not break compaction
                pass
        return entry_tokens(
            entry,
            overhead=self.entry_overhead,
            image_tokens=self.image_tokens,
            file_tokens=self.file_tokens,
        )

    def _schema(self, tool: object) -> int:
        schema = getattr(tool, "openai_schema", None)
        text = ""
        if callable(schema):
            try:
                text = json.dumps(schema(), ensure_ascii=False, separators=(",", ":"))
            except Exception:
                text = ""  # an unknown shape costs the framing only
        return estimate_tokens(text) + self.entry_overhead


def _remembered(memo: OrderedDict[int, tuple[Any, int]], size: int, item: Any, measure: Any) -> int:
    key = id(item)
    hit = memo.get(key)
    if hit is not None and _alive(hit[0]) is item:
        memo.move_to_end(key)
        return hit[1]
    tokens: int = measure(item)
    while len(memo) >= max(size, 1):
        memo.popitem(last=False)
    try:
        memo[key] = (weakref.ref(item), tokens)
    except TypeError:  # not weak-referenceable: keep the object itself
        memo[key] = (item, tokens)
    return tokens


def _alive(ref: Any) -> Any:
    return ref() if isinstance(ref, weakref.ref) else ref
