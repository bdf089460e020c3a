"""Run-level limits and signals: ``CancelToken``, ``RetryPolicy``, ``RunBudget``."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import BudgetExceeded, RunCancelled, UserTypeError
from .errors import ProviderError as ProviderError  # 0.9.119's module held it too
from .settings import RetryPolicy
from .usage import Usage

__all__ = ["CancelToken", "RetryPolicy", "RunBudget"]


def transport_failure(exc: BaseException) -> bool:
    """Whether a raw exception out of a provider's stream looks like the network failing
    (an ``OSError``, a timeout, an HTTP client's transport error) rather than a bug in the
    provider: the run wraps it in a ``ProviderError`` that the default ``RetryPolicy``
    retries only in the first case."""
    if isinstance(exc, (OSError, TimeoutError)):
        return True
    return any(
        kind.__module__.split(".")[0].rstrip("0123456789") in _TRANSPORT_PACKAGES
        for kind in type(exc).__mro__
    )


_TRANSPORT_PACKAGES = frozenset(("httpx", "httpcore", "h11", "h2", "aiohttp", "anyio"))


class CancelToken:
    """Ask a run to stop. The run stops at its next safe point and raises ``RunCancelled``.

    Safe points: before each turn, during a model call (the stream is closed), at each tool
    call's preflight and while tools run (tools already finished keep their results; tools
    still running are cancelled and their calls stay without a result, to be run again on
    resume). A sync tool's thread cannot be stopped: the run waits a few seconds for it, and
    keeps its result if it returns in that time.
    """

    __slots__ = ("_callbacks", "_cancelled", "reason")

    def __init__(self) -> None:
        self._cancelled = False
        self.reason: str | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def is_cancelled(self) -> bool:
        """``True`` once ``cancel()`` was called."""
        return self._cancelled

    def cancel(self, reason: str | None = None) -> None:
        """Request cancellation (idempotent; the first reason is kept)."""
        if self._cancelled:
            return
        self._cancelled = True
        self.reason = reason
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def check(self) -> None:
        """Raise ``RunCancelled`` if cancellation was requested."""
        if self._cancelled:
            # The message is the reason as given (lovia 0.9.119's users match on it).
            raise RunCancelled(self.reason or "run cancelled")

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` on cancellation (at once if already cancelled); returns a remover."""
        if self._cancelled:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self._cancelled}, reason={self.reason!r})"


@dataclass
class RunBudget:
    """Hard limits on one run; ``None`` means unconstrained.

    Checked before each turn, after each model call and at each tool call's preflight; work
    already in flight when a limit trips finishes, then the run fails with ``BudgetExceeded``.
    ``max_tool_calls`` counts every requested call, rejected ones included. ``max_seconds`` is
    wall-clock time from the first check. A budget carries one run's counters: use a fresh
    one per run (``dataclasses.replace(budget)`` copies the limits without the counters).
    With a checkpoint, the counters are saved in the run's head and a resumed run goes on
    from them.
    """

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None
    max_tool_calls: int | None = None
    max_seconds: float | None = None
    _started_at: float | None = field(default=None, init=False, repr=False)
    _tool_calls: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in (
            "max_input_tokens",
            "max_output_tokens",
            "max_total_tokens",
            "max_tool_calls",
            "max_seconds",
        ):
            value = getattr(self, name)
            # a negative limit is already used up: the first check fails the run with
            # BudgetExceeded, as in 0.9.119
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise UserTypeError(
                    f"RunBudget({name}={value!r}): a limit must be a number, not "
                    f"{type(value).__name__}",
                    hint="pass a number (or None for no limit)",
                )

    @property
    def tool_calls(self) -> int:
        """Tool calls requested so far in this run."""
        return self._tool_calls

    def record_tool_call(self) -> None:
        self._tool_calls += 1

    def start(self) -> None:
        """Start the clock of ``max_seconds`` (once; the first ``check`` starts it otherwise).
        A run starts it as it begins, so the check before its first model call already
        counts the run's own time: a budget of 0 seconds stops the run before that call."""
        if self._started_at is None:
            self._started_at = time.monotonic()

    def check(self, usage: Usage) -> None:
        """Raise ``BudgetExceeded`` if a limit is exceeded."""
        now = time.monotonic()
        if self._started_at is None:
            self._started_at = now
        for label, used, limit in (
            ("input tokens", usage.input_tokens, self.max_input_tokens),
            ("output tokens", usage.output_tokens, self.max_output_tokens),
            ("total tokens", usage.total_tokens, self.max_total_tokens),
            ("tool call count", self._tool_calls, self.max_tool_calls),
        ):
            if limit is not None and used > limit:
                raise BudgetExceeded(
                    f"{label} {used} exceeds budget {limit}",
                    hint="raise the RunBudget limit, or resume the run with a larger budget",
                )
        if self.max_seconds is not None:
            elapsed = now - self._started_at
            if elapsed > self.max_seconds:
                raise BudgetExceeded(
                    f"elapsed {elapsed:.1f}s exceeds budget {self.max_seconds:.1f}s",
                    hint="raise RunBudget(max_seconds=...)",
                )

    def state(self) -> dict[str, Any]:
        """The counters to keep in a checkpoint head."""
        return {"tool_calls": self._tool_calls}

    def restore(self, state: dict[str, Any]) -> None:
        self._tool_calls = max(self._tool_calls, int(state.get("tool_calls", 0) or 0))
