"""Per-agent model settings, passed through to the provider."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = ["ModelSettings", "RetryPolicy"]


@dataclass(frozen=True)
class ModelSettings:
    """Sampling and tool-use settings; ``None`` means the provider's default."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    tool_choice: Literal["auto", "required", "none"] | str | None = None
    parallel_tool_calls: bool | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)

    def merged(self, other: ModelSettings | None) -> ModelSettings:
        """These settings with every non-``None`` field of ``other`` on top."""
        if other is None:
            return self
        changes = {k: v for k, v in other.__dict__.items() if v is not None and v != {}}
        return replace(self, **changes)


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed model call is retried: exponential backoff with jitter, capped.

    Only errors a retry can fix are retried (rate limits, 5xx, dropped connections before any
    output was produced). ``max_attempts`` counts the first try.
    """

    max_attempts: int = 4
    initial_delay: float = 0.5
    max_delay: float = 20.0
    multiplier: float = 2.0
    jitter: float = 0.2

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt + 1`` (``attempt`` is 1-based)."""
        import random

        base = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        return base * (1 + random.uniform(-self.jitter, self.jitter))
