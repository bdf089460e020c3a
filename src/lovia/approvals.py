"""Tool-call approvals: decided in process while a run waits, or durably across restarts.

In process: a run that reaches a call of a ``needs_approval`` tool emits
``events.ApprovalRequired``; the streaming consumer calls ``approve()``, ``reject(reason)`` or
``defer()`` on it (or on ``RunHandle.approvals`` by call id). Without a decision the agent's
``approval_handler`` decides; without one, the call is denied (fail closed).

Durably: ``defer()`` (or a handler returning ``"defer"``) parks the run. Its checkpoint head
lists the parked calls (``RunHead.pending_approvals``: call id, tool, raw arguments and their
digest), its status is ``"interrupted"``, and ``Runner.run`` raises ``ApprovalPending``.
Anyone with the checkpointer, in any process and at any later time, reads them with
``pending(checkpointer)`` and records a decision with ``decide(...)``; running the same
``run_id`` again resumes the run, and each approved call runs once, with the arguments that
were approved.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, replace
from typing import Any, Literal

from .errors import UserError

__all__ = [
    "ApprovalChannel",
    "ApprovalDecision",
    "Decision",
    "argument_digest",
    "decide",
    "pending",
]

ApprovalDecision = Literal["allow", "deny", "ask", "defer"]
"""What an ``approval_handler`` may return, besides ``True`` / ``False``."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision taken for one call: ``"allow"``, ``"deny"`` or ``"defer"``."""

    verdict: Literal["allow", "deny", "defer"]
    reason: str | None = None


class ApprovalChannel:
    """Decisions for a run's pending approvals, by call id (``RunHandle.approvals``)."""

    def __init__(self) -> None:
        self._open: set[str] = set()
        self._decided: dict[str, Decision] = {}

    def register(self, call_id: str) -> None:
        self._open.add(call_id)

    def is_pending(self, call_id: str) -> bool:
        """``True`` while the run waits for a decision on ``call_id``."""
        return call_id in self._open and call_id not in self._decided

    @property
    def pending_ids(self) -> list[str]:
        return [c for c in self._open if c not in self._decided]

    def resolve(self, call_id: str, decision: bool, *, reason: str | None = None) -> bool:
        """Allow (``True``) or deny (``False``) a pending call; ``False`` when there is none."""
        return self._set(call_id, Decision("allow" if decision else "deny", reason))

    def approve(self, call_id: str) -> bool:
        """Allow the call. Returns ``False`` when it is not pending (unknown or decided)."""
        return self._set(call_id, Decision("allow"))

    def reject(self, call_id: str, *, reason: str | None = None) -> bool:
        """Deny the call; the model sees the denial (and ``reason``)."""
        return self._set(call_id, Decision("deny", reason))

    def defer(self, call_id: str) -> bool:
        """Park the run durably until ``lovia.approvals.decide`` is called for this call."""
        return self._set(call_id, Decision("defer"))

    def release(self, *, decision: bool = False) -> None:
        """Decide every pending call at once."""
        for call_id in self.pending_ids:
            self.resolve(call_id, decision)

    def _set(self, call_id: str, decision: Decision) -> bool:
        if not self.is_pending(call_id):
            return False
        self._decided[call_id] = decision
        return True

    def decision(self, call_id: str) -> Decision | None:
        return self._decided.get(call_id)

    def discard(self, call_id: str) -> None:
        self._open.discard(call_id)
        self._decided.pop(call_id, None)


def handler_decision(value: Any) -> Decision | None:
    """Map an ``approval_handler`` result to a decision (``None``: nobody decided)."""
    if isinstance(value, Decision):
        return value
    if isinstance(value, str):
        token = value.strip().lower()
        if token == "ask":
            return None
        if token == "defer":
            return Decision("defer")
        return Decision("allow" if token == "allow" else "deny")
    return Decision("allow" if value else "deny")


def canonical_arguments(arguments: str) -> str:
    """The arguments' canonical JSON (sorted keys, no spaces); the raw text if not JSON."""
    try:
        value = json.loads(arguments or "{}")
    except (json.JSONDecodeError, TypeError):
        return arguments
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def argument_digest(tool_name: str, arguments: str) -> str:
    """SHA-256 (hex) of the tool name and the arguments' canonical JSON."""
    text = tool_name + "\n" + canonical_arguments(arguments)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _pending_type() -> Any:
    from .stores.checkpoint import PendingApproval

    return PendingApproval


def new_pending(call_id: str, tool_name: str, arguments: str, agent_name: str | None) -> Any:
    return _pending_type()(
        call_id=call_id,
        tool_name=tool_name,
        arguments=arguments,
        digest=argument_digest(tool_name, arguments),
        agent_name=agent_name,
        requested_at=time.time(),
    )


async def pending(checkpointer: Any, run_id: str | None = None) -> list[Any]:
    """Approvals waiting for a decision: of one run, or of every parked run in the store.

    Each item is a ``PendingApproval`` (``run_id``, ``call_id``, ``tool_name``, ``arguments``,
    ``digest``, ``agent_name``, ``requested_at``, and ``decision`` once one was recorded but
    the run has not resumed yet).
    """
    if run_id is not None:
        snap = await checkpointer.load(run_id)
        if snap is None:
            return []
        return [replace(p, run_id=run_id) for p in snap.pending_approvals]
    out: list[Any] = []
    lister = getattr(checkpointer, "list_runs", None)
    if lister is None:
        raise UserError(
            f"{type(checkpointer).__name__} cannot list runs",
            hint="pass run_id=..., or use a built-in checkpointer",
        )
    for head in await lister(statuses=["interrupted"]):
        rid = getattr(head, "run_id", None)
        for p in getattr(head, "pending_approvals", ()) or ():
            out.append(replace(p, run_id=rid))
    return out


async def decide(
    checkpointer: Any,
    run_id: str,
    call_id: str,
    approve: bool,
    *,
    reason: str | None = None,
    digest: str | None = None,
) -> Any:
    """Record a decision for a parked call, atomically; returns the updated pending item.

    ``digest`` (from ``pending``) guards against approving other arguments than the ones
    shown: when given and different, nothing is changed and ``UserError`` is raised. A
    decision can be recorded once; repeating the same decision is a no-op, a different one is
    refused. The run goes on when its ``run_id`` is run again (``Runner.run`` with the same
    ``CheckpointOptions``; the web page and ``lovia runs resume`` do it for you).
    """
    if not isinstance(approve, bool):
        raise UserError(
            f"decide(approve=...) takes True or False, got {approve!r}",
            hint="approve=True runs the call once; approve=False refuses it",
        )
    verdict = "allow" if approve else "deny"
    problem: list[UserError] = []
    found: list[Any] = []

    def apply(head: Any) -> Any:
        items = list(getattr(head, "pending_approvals", ()) or ())
        for i, p in enumerate(items):
            if p.call_id != call_id:
                continue
            if digest is not None and digest != p.digest:
                problem.append(
                    UserError(
                        f"call {call_id!r} of run {run_id!r} has other arguments than the "
                        "ones you decided on",
                        hint="read lovia.approvals.pending(...) again and decide on what it shows",
                    )
                )
                return None
            if p.decision is not None:
                if p.decision != verdict:
                    problem.append(
                        UserError(
                            f"call {call_id!r} of run {run_id!r} was already decided "
                            f"({p.decision})",
                            hint="a decision is final; start a new run to do otherwise",
                        )
                    )
                found.append(p)
                return None
            items[i] = replace(p, decision=verdict, reason=reason)
            found.append(items[i])
            return replace(head, pending_approvals=tuple(items))
        problem.append(
            UserError(
                f"run {run_id!r} has no approval pending for call {call_id!r}",
                hint="list them with lovia.approvals.pending(checkpointer, run_id)",
            )
        )
        return None

    updated = await checkpointer.update_head(run_id, apply)
    if problem:
        raise problem[0]
    if not found:
        raise UserError(
            f"no stored run {run_id!r}",
            hint="list parked runs with lovia.approvals.pending(checkpointer)",
        )
    del updated
    return replace(found[0], run_id=run_id)
