"""``Run``: what a phase of the run (setup, replay, turn, tools, approval, output) may use of
the run it serves, declared once. The driver (loop.py) provides it; no phase imports the
driver, so the phases and the loop do not import each other in a circle.

The run's state: ``state`` (the only mutable run state), the input and what setup read.
Its services: ``kit`` (the agents' providers, tools, policies and plugins), ``emitter``,
``recorder`` (checkpoint and session writes), the cancel token, the budget and the tracer
(the options' own, read once). What an agent uses (provider, policy, tools, output type,
plugins) is asked of ``kit``, the one place that knows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..agent import Agent
    from ..approvals import ApprovalChannel
    from ..events import Event
    from ..reliability import CancelToken, RunBudget
    from ..run_context import RunContext
    from ..stores.run_options import CheckpointOptions
    from ..transcript import TranscriptEntry
    from .agents import AgentKit
    from .emit import Emitter
    from .options import RunOptions
    from .persist import RunRecorder
    from .state import RunState

__all__ = ["Run"]


class Run(Protocol):
    """One run as its phases see it."""

    # what the run was asked
    entry_agent: Agent
    input: Any
    o: RunOptions
    run_id: str
    checkpoint: CheckpointOptions | None  # a checkpointed run's options (None: none)

    # its state
    state: RunState
    ctx: RunContext[Any]
    new_input: list[TranscriptEntry] | None  # the input read, before any write
    history_read: tuple[list[Any], int | None] | None  # setup's one read of the session
    repairs: int  # output repairs asked for so far

    # its services
    kit: AgentKit
    emitter: Emitter
    recorder: RunRecorder
    approvals: ApprovalChannel
    cancel_token: CancelToken
    budget: RunBudget | None
    tracer: Any
    traced: bool  # a real tracer: spans are made
    saves: bool  # a checkpoint to write

    async def emit(self, event: Event) -> None:
        """To the hooks and the stream."""

    async def send(self, event: Event) -> None:
        """To the stream only."""

    async def save(self) -> None:
        """The state to the checkpoint, if the run has one."""
