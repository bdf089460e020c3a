"""A person's decision on a call a parked run waits for: what it must name, how it is
recorded, and which calls wait for a person at all.

The supervisor holds the chat's claim and the run's lease around ``record_decision``; the
checks here only read, so a refused decision leaves nothing written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .. import approvals
from .._run.resume import reachable_agents
from ..agent import Agent
from ..errors import UserError
from ..events import ApprovalRequired
from ..stores.checkpoint import Checkpointer, RunInfo
from .claims import ChatBusy

__all__ = [
    "ApprovalConflict",
    "ApprovalStale",
    "asks_a_person",
    "check_waiting",
    "record_decision",
]


class ApprovalConflict(ChatBusy):
    """A decision that cannot be taken: the call was decided otherwise, or is not waiting
    for a decision any more (the API answers 409; nothing was written)."""


class ApprovalStale(ApprovalConflict):
    """A decision for something other than what waits now: the run it names no longer
    waits, or the call of that id waits with another tool or arguments (``code``:
    ``"approval_stale"``), or the call id alone is ambiguous (``"approval_ambiguous"``).
    The API answers 409 with that code; nothing was written, nothing run."""

    code: str = "approval_stale"


def check_waiting(
    parked: RunInfo | None, chat_id: str, call_id: str, run_id: str | None
) -> RunInfo:
    """The chat's parked run, when it is ``run_id`` (if given) and waits for ``call_id``:
    else ``ApprovalStale`` (another run waits) or ``ApprovalConflict`` (no such call)."""
    if run_id is not None and (parked is None or parked.run_id != run_id):
        now = "no run of the chat waits" if parked is None else f"run {parked.run_id!r} waits"
        raise ApprovalStale(
            f"run {run_id!r} of chat {chat_id!r} no longer waits for a decision on call "
            f"{call_id!r} ({now}); nothing was decided",
            hint="reload the chat and decide on what it shows now",
        )
    if parked is None or not any(p.call_id == call_id for p in parked.pending_approvals):
        raise ApprovalConflict(
            f"chat {chat_id!r} has no call {call_id!r} waiting for a decision",
            hint="it was decided already (and the run went on), or the chat moved on: "
            "reload the chat to see where it stands",
        )
    return parked


async def record_decision(
    checkpointer: Checkpointer,
    chat_id: str,
    run_id: str,
    call_id: str,
    approve: bool,
    *,
    reason: str | None,
    digest: str | None,
    then: Callable[[Any, Any], Awaitable[None]] | None = None,
) -> None:
    """Write the decision to the run's checkpoint; the caller holds the run's lease. ``then``
    runs in the decision's transaction (``approvals.decide_holding``). A refused write is
    ``ApprovalStale`` (the call changed) or ``ApprovalConflict``."""
    try:
        await approvals.decide_holding(
            checkpointer,
            run_id,
            {call_id: approve},
            reason=reason,
            take_lease=False,
            digests=None if digest is None else {call_id: digest},
            then=then,
        )
    except UserError as exc:
        if getattr(exc, "code", None) in ("approval_stale", "approval_ambiguous"):
            raise ApprovalStale(
                exc.message, hint=exc.hint, code=getattr(exc, "code", None)
            ) from exc
        raise ApprovalConflict(
            f"cannot {'approve' if approve else 'reject'} call {call_id!r} of "
            f"chat {chat_id!r}: {exc.message}",
            hint="a decision is final; reload the chat to see where it stands",
        ) from exc


def asks_a_person(agents: Mapping[str, Agent], event: ApprovalRequired) -> bool:
    """Whether a call that needs approval waits for a person on the page: yes, unless
    the agent asking has an ``approval_handler`` (it decides, and may defer itself)."""
    name = event.agent_name
    for entry in agents.values():
        agent = reachable_agents(entry).get(name or entry.name)
        if agent is not None:
            return agent.approval_handler is None
    return True
