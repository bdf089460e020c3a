"""The approval gate of a tool call's preflight, and the budget's count of a phase's calls.

A call's decision comes from a stored one (durable approvals: ``lovia.approvals.decide``)
or is asked for now (the ``ApprovalRequired`` event, then the agent's ``approval_handler``).
A call that reuses the id of an earlier call of the same turn never takes a stored decision
and is never parked: ``decide`` names calls by id, so a parked call needs an id of its own.
A live turn has none (``transcript.unique_call_ids``); a turn stored before that may.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter
from typing import TYPE_CHECKING, Literal, cast

from .. import events as ev
from ..approvals import Decision, argument_digest, handler_decision, new_pending
from ..errors import RunCancelled, UserError
from ..transcript import ToolCallEntry
from .outcome import as_call

if TYPE_CHECKING:
    from .run import Run
    from .state import RunState

__all__ = ["OPEN", "approval", "counted_at_start", "reused_text"]

log = logging.getLogger("lovia.run")
Verdict = Literal["allow", "deny"]
OPEN = "counted_open"  # budget state: ids of the calls counted that have no result yet


def reused_text(call: ToolCallEntry) -> str:
    """The result of a call dropped for reusing a call id (what the model reads)."""
    return (
        f"Tool {call.name} was not run: its call id {call.call_id!r} is also the id of an "
        "earlier call in this turn, and a call waiting for approval needs an id of its own. "
        "Call the tool again if it is still needed."
    )


def counted_at_start(state: RunState) -> Counter[str]:
    """The calls of a phase the budget counted already, by id: the head's list, or for a
    head written without one, the parked and in-doubt calls (counted when first asked for)."""
    known = state.budget_state.get(OPEN)
    if isinstance(known, list):
        return Counter(str(c) for c in known)
    return Counter([p.call_id for p in state.pending_approvals] + list(state.started_calls))


def _stored(state: RunState, call: ToolCallEntry) -> Decision | None:
    """The decision recorded for a parked call, consumed (``None``: none, or undecided)."""
    for i, stored in enumerate(state.pending_approvals):
        if stored.call_id != call.call_id:
            continue
        del state.pending_approvals[i]  # consumed by the save that starts the call
        if stored.digest != argument_digest(call.name, call.arguments):
            return Decision("deny", "its arguments differ from the ones the approval was asked for")
        if stored.decision in ("allow", "deny"):
            return Decision(cast(Verdict, stored.decision), stored.reason)
        return None  # still undecided: ask again (event, handler), which may park it again
    return None


async def approval(d: Run, call: ToolCallEntry, *, reused: bool) -> Decision:
    """The decision for one call that needs approval. A ``"defer"`` of a call with an id of
    its own parks it (in ``state.pending_approvals``); of a ``reused`` one, it parks nothing."""
    state = d.state
    if not reused:
        stored = _stored(state, call)
        if stored is not None:
            return stored
    channel = d.approvals
    channel.register(call.call_id)
    try:
        await d.emit(
            ev.ApprovalRequired(
                as_call(call), channel, agent_name=state.agent.name, run_id=d.run_id
            )
        )
        decision = channel.decision(call.call_id)
        handler = state.agent.approval_handler
        if decision is None and handler is not None:
            try:
                value = handler(as_call(call), d.ctx)
                if inspect.isawaitable(value):
                    value = await value
                decision = handler_decision(value)
            except (RunCancelled, asyncio.CancelledError):
                raise
            except Exception as exc:
                log.warning("approval_handler failed for %s: %r; denied", call.name, exc)
                await d.emit(ev.ToolCallFailed(exc, as_call(call)))
                decision = Decision("deny")
    finally:
        channel.discard(call.call_id)
    if decision is None:
        return Decision("deny")  # nobody decided: fail closed
    if decision.verdict == "defer":
        if d.checkpoint is None:
            raise UserError(
                f"tool call {call.call_id!r} ({call.name}) was deferred for approval, but "
                "this run has no checkpoint to wait in; the call did not run",
                hint="pass checkpoint=CheckpointOptions(checkpointer, run_id) to park runs",
            )
        if not reused:
            state.pending_approvals.append(
                new_pending(call.call_id, call.name, call.arguments, state.agent.name)
            )
    return decision
