"""Per-agent model settings, passed through to the provider."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = ["ModelSettings", "RetryPolicy"]


@dataclass(frozen=True)
class ModelSettings:
    """Sampling and tool-use settings; ``None`` means the provider's default.

    ``stop`` is sent as ``stop`` (OpenAI) or ``stop_sequences`` (Anthropic). ``extra_body``
    holds raw request fields for any provider; ``provider_options`` holds them per vendor
    (``{"openai": {...}, "anthropic": {...}}``, also read under ``"openai-chat"`` and
    ``"claude"``) and wins over ``extra_body``; a ``None`` value there removes a field the
    provider would have sent. ``{"anthropic": {"cache_system": True}}`` asks Anthropic to cache
    the tools, the system prompt and the conversation so far; ``"cache_ttl": "1h"`` does too,
    with the one-hour cache (``"5m"``, the default lifetime, is the other value it takes).
    """

    # lovia 0.9.119's fields first, in its order (a positional call means the same), then ours.
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    parallel_tool_calls: bool | None = None
    provider_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    tool_choice: Literal["auto", "required", "none"] | str | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)

    def merged(self, other: ModelSettings | None) -> ModelSettings:
        """These settings with every non-``None`` field of ``other`` on top."""
        if other is None:
            return self
        changes = {k: v for k, v in other.__dict__.items() if v is not None and v != {}}
        return replace(self, **changes)


def _default_retry_on(exc: BaseException) -> bool:
    """Retry what a retry can fix: rate limits, timeouts, 5xx, dropped connections."""
    from .errors import ProviderError

    if not isinstance(exc, ProviderError):
        return False
    if exc.retryable is not None:
        return bool(exc.retryable)
    code = exc.status_code
    return code is None or code in (408, 409, 429) or code >= 500


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed model call is retried: exponential backoff with jitter, capped.

    ``max_attempts`` counts the first try (``1``, or 0 or less, disables retrying).
    ``retry_on(exc)`` decides which errors are transient (by default: rate limits, timeouts,
    5xx, dropped connections; a provider marks a deterministic failure ``retryable=False``). With
    ``restart_on_partial`` a failure after text was streamed discards that partial output
    (event ``OutputDiscarded``) and streams the turn again; without it such a failure ends
    the run. Each retry is announced by a ``ModelRetrying`` event. ``backoff_base`` and
    ``backoff_max`` (aliases of ``initial_delay`` and ``max_delay``) set the schedule.
    """

    # lovia 0.9.119's fields first, in its order (a positional call means the same), then ours.
    max_attempts: int = 5
    restart_on_partial: bool = True
    backoff_base: float | None = None
    backoff_max: float | None = None
    retry_on: Callable[[BaseException], bool] = field(default=_default_retry_on)
    sleep: Callable[[float], Awaitable[None]] = field(default=_sleep)
    initial_delay: float = 1.0
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if not isinstance(self.max_attempts, int):  # 0 or less: one try, no retry (0.9.119)
            from .errors import UserError

            raise UserError(
                f"RetryPolicy(max_attempts={self.max_attempts!r}) must be an int",
                hint="max_attempts=1 disables retrying",
            )
        if self.backoff_base is not None:
            object.__setattr__(self, "initial_delay", float(self.backoff_base))
        else:
            object.__setattr__(self, "backoff_base", self.initial_delay)
        if self.backoff_max is not None:
            object.__setattr__(self, "max_delay", float(self.backoff_max))
        else:
            object.__setattr__(self, "backoff_max", self.max_delay)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt + 1`` (``attempt`` is 1-based)."""
        import random

        base = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        return base * (1 + random.uniform(-self.jitter, self.jitter))

    def backoff_delay(self, attempt: int) -> float:
        """The same schedule under 0.9.119's name."""
        return self.delay(attempt)
