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

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from .errors import UserError
from .messages import ToolCall

__all__ = [
    "ApprovalChannel",
    "ApprovalDecision",
    "Decision",
    "argument_digest",
    "decide",
    "pending",
    "pending_approvals",
]

ApprovalDecision = Literal["allow", "deny", "ask", "defer"]
"""What an ``approval_handler`` may return, besides ``True`` / ``False``."""


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision taken for one call: ``"allow"``, ``"deny"`` or ``"defer"``."""

    verdict: Literal["allow", "deny", "defer"]
    reason: str | None = None


class ApprovalChannel:
    """Decisions for a run's pending approvals, by call id (``RunHandle.approvals``).

    ``scope`` keeps apart calls that share an id but belong to different runs or agents
    using one channel; each method acts within one scope (``None`` by default).
    ``register`` returns a future that a decision resolves: ``True`` allowed, ``False``
    denied (a deferral leaves it pending; ``discard`` cancels it).
    """

    def __init__(self) -> None:
        self._open: dict[tuple[str | None, str], asyncio.Future[bool]] = {}
        self._decided: dict[tuple[str | None, str], Decision] = {}

    def register(self, call_id: str, *, scope: str | None = None) -> asyncio.Future[bool]:
        """Open ``call_id`` for a decision (from inside the event loop); the future resolves
        when it is decided."""
        key = (scope, call_id)
        future = self._open.get(key)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._open[key] = future
        return future

    def is_pending(self, call_id: str, *, scope: str | None = None) -> bool:
        """``True`` while the run waits for a decision on ``call_id``."""
        key = (scope, call_id)
        return key in self._open and key not in self._decided

    @property
    def pending_ids(self) -> list[str]:
        return [c for (s, c) in self._open if self.is_pending(c, scope=s)]

    def resolve(
        self, call_id: str, decision: bool, *, reason: str | None = None, scope: str | None = None
    ) -> bool:
        """Allow (``True``) or deny (``False``) a pending call; ``False`` when there is none."""
        return self._set(call_id, Decision("allow" if decision else "deny", reason), scope)

    def approve(self, call_id: str, *, scope: str | None = None) -> bool:
        """Allow the call. Returns ``False`` when it is not pending (unknown or decided)."""
        return self._set(call_id, Decision("allow"), scope)

    def reject(self, call_id: str, *, reason: str | None = None, scope: str | None = None) -> bool:
        """Deny the call; the model sees the denial (and ``reason``)."""
        return self._set(call_id, Decision("deny", reason), scope)

    def defer(self, call_id: str, *, scope: str | None = None) -> bool:
        """Park the run durably until ``lovia.approvals.decide`` is called for this call.
        Raises ``RuntimeError`` when the call was already approved or rejected."""
        done = self._decided.get((scope, call_id))
        if done is not None and done.verdict != "defer":
            raise RuntimeError(f"call {call_id!r} was already decided; it cannot be deferred")
        return self._set(call_id, Decision("defer"), scope)

    def release(self, *, decision: bool = False, scope: str | None = None) -> None:
        """Decide every pending call of ``scope`` at once."""
        for key_scope, call_id in list(self._open):
            if key_scope == scope and self.is_pending(call_id, scope=scope):
                self.resolve(call_id, decision, scope=scope)

    def _set(self, call_id: str, decision: Decision, scope: str | None) -> bool:
        key = (scope, call_id)
        future = self._open.get(key)
        if future is None or key in self._decided:
            return False
        self._decided[key] = decision
        if decision.verdict != "defer" and not future.done():
            future.set_result(decision.verdict == "allow")
        return True

    def decision(self, call_id: str, *, scope: str | None = None) -> Decision | None:
        return self._decided.get((scope, call_id))

    def discard(self, call_id: str, *, scope: str | None = None) -> None:
        future = self._open.pop((scope, call_id), None)
        if future is not None and not future.done():
            future.cancel()
        self._decided.pop((scope, call_id), None)


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


async def _update_head(
    checkpointer: Any, run_id: str, fn: Any, *, take_lease: bool, then: Any = None
) -> None:
    """Change the run's head while holding the run's lease, so no worker loads the parked run
    before the decision lands and then saves over it. Inside: ``checkpointer.update_head`` (one
    transaction) when it has one; otherwise load, change and save the head (a checkpointer
    without leases gets the same steps unguarded). ``then`` (``update_head_with``'s) joins
    the head's transaction."""
    from .stores.capabilities import UpdatesHeads, UpdatesHeadsTogether, has_capability
    from .stores.lease import LeaseStore
    from .stores.run_lease import RunLease

    together = has_capability(checkpointer, UpdatesHeadsTogether)
    if then is not None and not together:
        raise UserError(
            f"{type(checkpointer).__name__} cannot write a decision together with other "
            "rows in one transaction",
            hint="use PostgresCheckpointer (a queue's resumption is written with the decision)",
        )
    store = checkpointer if take_lease and isinstance(checkpointer, LeaseStore) else None
    lease = RunLease(store, run_id, ttl=30.0, on_busy="wait", wait_timeout=30.0)
    await lease.acquire()
    try:
        if then is not None:
            await cast("UpdatesHeadsTogether", checkpointer).update_head_with(run_id, fn, then)
            return
        if has_capability(checkpointer, UpdatesHeads):
            await cast("UpdatesHeads", checkpointer).update_head(run_id, fn)
            return
        snap = await checkpointer.load(run_id)
        if snap is None:
            return
        head = fn(snap.head)
        if head is not None:
            await checkpointer.append(run_id, [], head)
    finally:
        await lease.release()


def unspent_approvals(snapshot: Any, stored: Any) -> Any:
    """``snapshot`` (a copy the caller holds, ``resume_from=``) with each decision that the
    stored run of that id no longer holds undone: the stored run used it (or it was never
    recorded there), so the call is asked about again instead of running a second time.
    Without a stored run there is nothing to check against and the copy is kept."""
    if stored is None or not snapshot.pending_approvals:
        return snapshot
    held = {(p.call_id, p.digest, p.decision) for p in stored.pending_approvals}
    kept = tuple(
        p
        if p.decision is None or (p.call_id, p.digest, p.decision) in held
        else replace(p, decision=None, reason=None)
        for p in snapshot.pending_approvals
    )
    if kept == snapshot.pending_approvals:
        return snapshot
    return replace(snapshot, pending_approvals=kept)


async def pending(checkpointer: Any, run_id: str) -> list[ToolCall]:
    """The undecided calls a parked run waits for, as ``ToolCall`` objects (``arguments`` as
    raw JSON text); ``[]`` for a run that is not parked; ``UserError`` for an unknown run."""
    snap = await checkpointer.load(run_id)
    if snap is None:
        raise UserError(
            f"no stored run {run_id!r}",
            hint="check the run id (lovia runs list shows the stored runs)",
        )
    if snap.status != "interrupted":
        return []
    return [
        ToolCall(id=p.call_id, name=p.tool_name, arguments=p.arguments)
        for p in snap.pending_approvals
        if p.decision is None
    ]


async def pending_approvals(checkpointer: Any, run_id: str) -> list[Any]:
    """Like ``pending`` but the stored records (``PendingApproval``: digest, agent, time,
    and the decision once one was recorded)."""
    snap = await checkpointer.load(run_id)
    if snap is None:
        raise UserError(f"no stored run {run_id!r}", hint="check the run id")
    return [replace(p, run_id=run_id) for p in snap.pending_approvals]


async def decide(
    checkpointer: Any,
    run_id: str,
    decisions: dict[str, bool],
    reason: str | None = None,
    *,
    digests: dict[str, str] | None = None,
) -> None:
    """Record decisions for a parked run's calls, ``{call_id: True | False}``, atomically.

    Some calls may be decided and others left pending. ``reason`` is kept with each decision
    (a rejected call's result shows it to the model). Deciding a call the same way twice is a
    no-op; a conflicting decision, an unknown run or call, or a run that is not parked raises
    ``UserError`` and writes nothing. The decisions are written while holding the run's
    lease, so a worker that is resuming the run right now (and may park it again) finishes
    first; ``RunBusy`` if it does not let go within 30 s. The run goes on when its ``run_id``
    is run again (``Runner.run`` with the same ``CheckpointOptions``, ``lovia runs resume
    RUN_ID``).

    ``digests`` (``{call_id: digest}``, the ``digest`` that ``pending_approvals`` and the
    ``ApprovalRequired`` event show) binds a decision to the call a person was shown: when
    the call of that id now waits with another tool or other arguments, the decision is
    refused (``UserError`` with ``code="approval_stale"``) and nothing is written. Without a
    digest, a call id that more than one waiting call of the run carries is refused
    (``code="approval_ambiguous"``): name the one you mean by its digest.
    """
    await decide_holding(checkpointer, run_id, decisions, reason, take_lease=True, digests=digests)


async def decide_holding(  # noqa: C901 - each refusal named
    checkpointer: Any,
    run_id: str,
    decisions: dict[str, bool],
    reason: str | None = None,
    *,
    take_lease: bool,
    digests: dict[str, str] | None = None,
    then: Callable[[Any, Any], Awaitable[None]] | None = None,
) -> None:
    """``decide``; ``take_lease=False`` for a caller that holds the run's lease already (the
    web server takes it first, so that a busy run is refused before anything is written).
    ``then(conn, head)`` runs in the decision's transaction once the head changed (a
    checkpointer with ``update_head_with``, PostgreSQL's): a job queue writes the run's
    resumption there, so the decision and its job commit together or not at all."""
    if not isinstance(decisions, dict) or not decisions:
        raise UserError(
            "decide() takes a non-empty dict {call_id: True | False}",
            hint="e.g. decide(cp, run_id, {call.id: True})",
        )
    for call_id, verdict in decisions.items():
        if not isinstance(call_id, str) or not isinstance(verdict, bool):
            raise UserError(
                f"decide(): {call_id!r}: {verdict!r} is not call_id: True | False",
                hint="True runs the call once; False refuses it",
            )
    wanted = dict(digests or {})
    for call_id, digest in wanted.items():
        if call_id not in decisions or not isinstance(digest, str) or not digest:
            raise UserError(
                f"decide(): digests names {call_id!r} with {digest!r}, not a decided call "
                "and its digest",
                hint="digests={call_id: digest} for calls that decisions decides",
            )
    problem: list[UserError] = []
    seen: list[bool] = []

    def apply(head: Any) -> Any:
        seen.append(True)
        if head.status != "interrupted" or not head.pending_approvals:
            problem.append(
                UserError(
                    f"run {run_id!r} is not waiting for an approval ({head.status})",
                    hint="lovia.approvals.pending(checkpointer, run_id) lists what it waits for",
                )
            )
            return None
        items = list(head.pending_approvals)
        changed = False
        for call_id, approve in decisions.items():
            verdict = "allow" if approve else "deny"
            found = _match(run_id, items, call_id, wanted.get(call_id))
            if isinstance(found, UserError):
                problem.append(found)
                return None
            i = found
            p = items[i]
            if p.digest != argument_digest(p.tool_name, p.arguments):
                problem.append(UserError(f"call {call_id!r}: its stored arguments do not match"))
                return None
            if p.decision is not None:
                if p.decision != verdict:
                    problem.append(
                        UserError(
                            f"call {call_id!r} of run {run_id!r} was already decided "
                            f"({'approved' if p.decision == 'allow' else 'rejected'})",
                            hint="a decision is final",
                        )
                    )
                    return None
                continue
            items[i] = replace(p, decision=verdict, reason=reason)
            changed = True
        return replace(head, pending_approvals=tuple(items)) if changed else None

    # refuse at once what cannot be decided, without waiting for the lease of a live run
    current = await checkpointer.load(run_id)
    if current is None:
        raise UserError(
            f"no stored run {run_id!r}",
            hint="check the run id (lovia runs list shows the stored runs)",
        )
    apply(current.head)
    if problem:
        raise problem[0]
    seen.clear()
    await _update_head(checkpointer, run_id, apply, take_lease=take_lease, then=then)
    if not seen:
        raise UserError(
            f"no stored run {run_id!r}",
            hint="check the run id (lovia runs list shows the stored runs)",
        )
    if problem:
        raise problem[0]


def _match(run_id: str, items: list[Any], call_id: str, digest: str | None) -> int | UserError:
    """The index of the waiting call a decision is for, or why there is none: the call of
    that id changed since it was shown (its digest differs), or the id alone is ambiguous."""
    same_id = [i for i, p in enumerate(items) if p.call_id == call_id]
    if not same_id:
        return UserError(
            f"run {run_id!r} has no pending call {call_id!r}",
            hint="lovia.approvals.pending(checkpointer, run_id) lists the call ids",
        )
    if digest is not None:
        exact = [i for i in same_id if items[i].digest == digest]
        if exact:
            return exact[0]
        now = items[same_id[-1]]
        return UserError(
            f"call {call_id!r} of run {run_id!r} changed since it was shown: it now waits as "
            f"{now.tool_name!r} with other arguments (digest {now.digest[:12]}, "
            f"not {digest[:12]}); nothing was decided",
            hint="read the call again (lovia.approvals.pending_approvals) and decide on what "
            "it shows now",
            code="approval_stale",
        )
    undecided = [i for i in same_id if items[i].decision is None] or same_id
    if len(undecided) > 1:
        return UserError(
            f"{len(undecided)} calls of run {run_id!r} carry the id {call_id!r}; "
            "nothing was decided",
            hint="name the one you mean by its digest (digests={call_id: digest})",
            code="approval_ambiguous",
        )
    return undecided[0]
