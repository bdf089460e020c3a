"""What tools, hooks, guardrails and dynamic instructions see of a live run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..transcript import TranscriptEntry
from ..usage import Usage

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["CancelToken", "RunContext"]

DepsT = TypeVar("DepsT")


class CancelToken:
    """Ask a run to stop. The run stops at its next safe point and raises ``RunCancelled``.

    Safe points: before each turn, during a model call (the stream is closed), and while tools
    run (tools already finished keep their results; tools still running are cancelled and
    their calls stay without a result, to be run again on resume).
    """

    __slots__ = ("_callbacks", "_cancelled", "reason")

    def __init__(self) -> None:
        self._cancelled = False
        self.reason: str | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
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


class _StateView:
    """The slice of the loop's mutable state a context reads (duck-typed by the loop)."""

    agent: Agent
    usage: Usage
    turn: int
    system_entries: list[TranscriptEntry]
    history: list[TranscriptEntry]
    entries: list[TranscriptEntry]


class RunContext(Generic[DepsT]):
    """The live context of a run: the caller's ``deps`` plus read-only views of the run.

    ``deps`` is never snapshotted: pass it again when you resume a run.
    """

    __slots__ = ("_state", "cancel_token", "deps", "run_id", "session_id")

    def __init__(
        self,
        *,
        deps: DepsT,
        run_id: str,
        session_id: str | None,
        cancel_token: CancelToken,
        state: Any,
    ) -> None:
        self.deps = deps
        self.run_id = run_id
        self.session_id = session_id
        self.cancel_token = cancel_token
        self._state: _StateView = state

    @property
    def agent(self) -> Agent:
        """The agent active now (it changes on a handoff)."""
        return self._state.agent

    @property
    def usage(self) -> Usage:
        return self._state.usage

    @property
    def turn(self) -> int:
        """The current turn, 1-based (0 before the first turn)."""
        return self._state.turn

    @property
    def entries(self) -> Sequence[TranscriptEntry]:
        """The live transcript: the system entry (if any), session history, then this run's."""
        s = self._state
        return (*s.system_entries, *s.history, *s.entries)
