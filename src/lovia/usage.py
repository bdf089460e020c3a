"""Token accounting.

``Usage`` adds up over turns and runs: ``a + b`` gives a new value (so does ``sum(...)``),
and ``a.add(b)`` adds ``b`` into ``a`` in place, as lovia 0.9.119's did. lovia itself only
ever builds new values, so a ``Usage`` it hands out never changes behind your back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Usage"]


@dataclass(slots=True)
class Usage:
    """Tokens a model call (or a sum of calls) consumed.

    ``input_tokens`` is the whole prompt, cached tokens included; the cache fields break it
    down for cost accounting.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def __radd__(self, other: object) -> Usage:
        # sum(usages) starts from 0
        if other == 0:
            return self.clone()
        return NotImplemented

    def add(self, other: Usage) -> None:
        """Add ``other`` into this value in place."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens

    def clone(self) -> Usage:
        """An independent copy."""
        return Usage(
            self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        if not data:
            return cls()
        return cls(
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            int(data.get("cache_read_tokens", 0)),
            int(data.get("cache_write_tokens", 0)),
        )
