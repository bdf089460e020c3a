"""The run's log narrative, told from its events: ``run.start``, ``tool.start``/``tool.done``,
``run.handoff``, ``run.done``, warnings for ``tool.error``, ``run.empty_output`` and a run
that stopped (``run.interrupted``), and an error for a run that failed (``run.failed``).

The logger names are 0.9.119's (``lovia.runtime.loop``, ``lovia.runtime.tool_calls``), so a
program that tunes or filters them keeps working. It also keeps ``CURRENT_AGENT`` on the
agent whose turn it is, for log filters that say which agent wrote a line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .. import events as ev
from ..errors import ApprovalPending, BudgetExceeded, MaxTurnsExceeded, RunCancelled
from ..log_config import CURRENT_AGENT
from ..usage import Usage
from .persist import stopped_not_failed

__all__ = ["LOOP_LOG", "TOOL_LOG", "narrate", "narrating", "usage_text"]

LOOP_LOG = logging.getLogger("lovia.runtime.loop")
TOOL_LOG = logging.getLogger("lovia.runtime.tool_calls")
_INTERRUPTED = (MaxTurnsExceeded, RunCancelled, BudgetExceeded, ApprovalPending)
_CLIP = 200


def usage_text(usage: Usage) -> str:
    """``tokens=N(in=I out=O)``, the form every narrative line uses."""
    return (
        f"tokens={usage.input_tokens + usage.output_tokens}"
        f"(in={usage.input_tokens} out={usage.output_tokens})"
    )


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _CLIP else text[:_CLIP] + "…"


def _run_started(e: ev.RunStarted) -> None:
    CURRENT_AGENT.set(e.agent.name)
    if LOOP_LOG.isEnabledFor(logging.INFO):
        model = e.agent.model
        if not isinstance(model, str):
            model = getattr(model, "model", None) or type(model).__name__
        LOOP_LOG.info(
            "run.start: agent=%r model=%s%s",
            e.agent.name,
            model,
            " resumed" if e.resumed else "",
        )


def _turn_started(e: ev.TurnStarted) -> None:
    LOOP_LOG.debug("run.turn.start: agent=%r turn=%d", e.agent.name, e.turn)


def _tool_started(e: ev.ToolCallStarted) -> None:
    if TOOL_LOG.isEnabledFor(logging.INFO):
        c = e.call
        TOOL_LOG.info("tool.start: %s call_id=%s args=%s", c.name, c.id, _clip(c.arguments))


def _tool_completed(e: ev.ToolCallCompleted) -> None:
    c = e.call
    if e.is_error:
        TOOL_LOG.warning("tool.error: %s call_id=%s (%s)", c.name, c.id, _clip(e.output))
    elif TOOL_LOG.isEnabledFor(logging.INFO):
        TOOL_LOG.info("tool.done: %s call_id=%s result=%s", c.name, c.id, _clip(e.output))


def _handoff(e: ev.HandoffOccurred) -> None:
    CURRENT_AGENT.set(e.to_agent.name)
    LOOP_LOG.info("run.handoff: %r → %r", e.from_agent.name, e.to_agent.name)


def _run_completed(e: ev.RunCompleted) -> None:
    r = e.result
    if r.output == "" and not r.replayed:
        LOOP_LOG.warning(
            "run.empty_output: model returned no content and no tool calls (finish=%s); "
            "run completes with empty output",
            r.finish_reason,
        )
    if LOOP_LOG.isEnabledFor(logging.INFO):
        name = getattr(r.final_agent, "name", None)
        LOOP_LOG.info(
            "run.done: agent=%r turns=%d %s%s",
            name,
            r.turns,
            usage_text(r.usage),
            " replayed" if r.replayed else "",
        )


def _run_failed(e: ev.RunFailed) -> None:
    err = e.error
    # the level follows the run's status, as in 0.9.119: a stopped run (resumable as it is)
    # is a warning, a failed one an error
    stopped = isinstance(err, _INTERRUPTED) or stopped_not_failed(err)
    what = "run.interrupted" if stopped else "run.failed"
    first = (str(err).splitlines() or [""])[0]
    LOOP_LOG.log(
        logging.WARNING if stopped else logging.ERROR,
        "%s: agent=%r (%s: %s)",
        what,
        CURRENT_AGENT.get(),
        type(err).__name__,
        first,
    )


_TELLERS: dict[type, Callable[[Any], None]] = {
    ev.RunStarted: _run_started,
    ev.TurnStarted: _turn_started,
    ev.ToolCallStarted: _tool_started,
    ev.ToolCallCompleted: _tool_completed,
    ev.HandoffOccurred: _handoff,
    ev.RunCompleted: _run_completed,
    ev.RunFailed: _run_failed,
}


def narrating() -> bool:
    """Whether the narrative's info lines are wanted: then every event is built for it.

    Its warnings (a tool error, an empty answer) are wanted by default; the sites that skip
    events nobody hears still emit those two."""
    return LOOP_LOG.isEnabledFor(logging.DEBUG) or TOOL_LOG.isEnabledFor(logging.INFO)


def narrate(event: ev.Event) -> None:
    """Log ``event``'s line, if it has one (deltas and most others have none)."""
    teller = _TELLERS.get(type(event))
    if teller is not None:
        teller(event)
