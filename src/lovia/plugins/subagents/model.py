"""The values of the Subagents plugin: ``ChildSpec`` (what a child run is given),
``SubagentReport`` (what comes back), the two callback types, and ``Child`` (the plugin's
bookkeeping of one spawned child, which the parent run and the tools share)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...reliability import CancelToken, RunBudget
from ...steering import Mailbox

if TYPE_CHECKING:
    from ..._run_types import RunResult
    from ...agent import Agent

__all__ = ["Child", "ChildSpec", "DeliverFn", "RunChildFn", "SubagentReport", "report_text"]


@dataclass(frozen=True)
class ChildSpec:
    """One spawned child: its ``id`` (``t1``, ``t2``... within the parent run), the agent and
    the self-contained ``prompt``, the ``token`` that ``cancel_subagent`` trips, the parent's
    session, the limits, and the ``mailbox`` that ``send_to_subagent`` writes to. It carries
    no deps on purpose: a child that outlives its parent needs its own."""

    id: str
    agent: Agent
    prompt: str
    token: CancelToken
    parent_session_id: str | None
    max_turns: int
    budget: RunBudget | None
    mailbox: Mailbox


@dataclass(frozen=True)
class SubagentReport:
    """A finished child: ``result`` when it completed, ``error`` when it failed, and
    ``text``, the report as the parent's model reads it."""

    id: str
    agent: str
    prompt: str
    session_id: str | None
    result: RunResult | None
    error: BaseException | None
    text: str


DeliverFn = Callable[[SubagentReport], Awaitable[None]]
"""``deliver(report)``: where a detached child's report goes (instead of the run's mailbox)."""
RunChildFn = Callable[[ChildSpec], Awaitable[Any]]
"""``run_child(spec) -> RunResult``: run a child some other way (a supervisor, a queue)."""


def report_text(
    task_id: str, agent: str, body: str, *, failed: bool, limit: int | None, elapsed: float = 0.0
) -> str:
    """``[subagent t1: done] agent=x elapsed=3s`` (0.9.119's header) and the body, cut to
    ``limit`` characters: its first two thirds and its last third, where a report's
    conclusion usually is."""
    if limit is not None and len(body) > limit:
        head = limit * 2 // 3
        tail = body[len(body) - (limit - head) :] if limit > head else ""
        body = f"{body[:head]}\n... [{len(body) - limit} chars truncated] ...\n{tail}"
    state = "failed" if failed else "done"
    return f"[subagent {task_id}: {state}] agent={agent} elapsed={max(0, int(elapsed))}s\n{body}"


@dataclass
class Child:
    """A spawned child within one parent run (the plugin's mutable bookkeeping)."""

    id: str
    agent: Agent
    prompt: str
    token: CancelToken = field(default_factory=CancelToken)
    mailbox: Mailbox = field(default_factory=Mailbox)
    task: asyncio.Task[None] | None = None
    report: SubagentReport | None = None
    cancelled: bool = False
    queued: int | None = None  # the mailbox token of its pushed report, until drained
    collected: bool = False  # the model has read its report
