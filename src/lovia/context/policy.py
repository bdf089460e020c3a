"""The ``ContextPolicy`` protocol: turn the transcript into the view one model call sees.

A policy changes only the view, never the transcript or the session. Whatever it must
remember between calls lives in ``state`` (a JSON-safe dict): the loop stores it in the
checkpoint head after every step and in the session segment's ``meta["context_state"]``
when the run completes, and hands it back on the next call, run or resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..transcript import TranscriptEntry

if TYPE_CHECKING:
    from ..events import ContextCompacted
    from ..providers.base import Provider
    from ..tools import Tool

__all__ = ["ContextPolicy", "ContextRequest", "ContextView", "NoopContextPolicy"]


@dataclass(frozen=True)
class ContextRequest:
    """Everything a policy may look at for one model call."""

    entries: Sequence[TranscriptEntry]
    """The whole transcript: system entry (if any), session history, this run's entries."""
    state: dict[str, Any]
    """The state the policy returned last time (``{}`` at first, or after a rewind)."""
    provider: Provider
    """The run's provider, for a policy that summarizes with a model call."""
    reported_input_tokens: int | None = None
    """Input tokens the provider reported for the previous call of this run, if any."""
    attempt: int = 0
    """0 normally; 1 after the provider refused the previous view as too long."""


@dataclass(frozen=True)
class ContextView:
    """What the policy decided for this call."""

    entries: list[TranscriptEntry]
    state: dict[str, Any] = field(default_factory=dict)
    compacted: ContextCompacted | None = None


@runtime_checkable
class ContextPolicy(Protocol):
    """Decides the view of each model call. ``tools()`` may add tools (e.g. recall)."""

    def tools(self) -> Sequence[Tool]: ...

    async def prepare(self, request: ContextRequest) -> ContextView: ...


class NoopContextPolicy:
    """Send the whole transcript every time; no extra tools, no state."""

    def tools(self) -> Sequence[Tool]:
        return ()

    async def prepare(self, request: ContextRequest) -> ContextView:
        return ContextView(list(request.entries), request.state)
