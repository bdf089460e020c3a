"""Estimate how many tokens text costs, fast and without a tokenizer.

``chars / 4`` is right for English and badly wrong for Chinese or Japanese, where one
character is usually a whole token. The estimate here uses UTF-8 bytes instead:
``(3 * bytes - chars) / 8`` gives 1/4 token per ASCII character, 1 token per CJK character
(3 bytes) and 5/8 per two-byte character (Cyrillic, Greek, accented Latin). The compaction
policy then scales it by the ratio the provider's reported input tokens revealed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError
from ..transcript import InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry

__all__ = [
    "MESSAGE_OVERHEAD",
    "InvalidBudget",
    "TokenBudget",
    "entry_tokens",
    "estimate_tokens",
    "usable_tokens",
]

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
