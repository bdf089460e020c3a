"""The run pump: a live run's events, from what drives it into its buffer.

A run is driven here (``Runner.stream``'s handle) or by a worker (the queue's events, read
from the database). Either way each event is published to the run's followers until the
terminal one, which is handed back unpublished: the supervisor settles the run before
anyone hears that it ended.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from .._run.handle import RunHandle
from ..errors import ApprovalPending, RunCancelled
from ..events import ApprovalRequired
from .live import LiveRun

__all__ = ["LOST", "event_dict", "log_end", "pump_queued", "pump_stream"]

log = logging.getLogger("lovia.web")

LOST = {"type": "RuntimeError", "message": "the run ended without a terminal event", "hint": None}
"""The error of a run whose task ended without a terminal event."""

_VOIDS_PARTIAL = frozenset(
    {"message_completed", "turn_started", "model_retrying", "output_discarded"}
)
"""Events after which the text streamed so far is no longer the model turn in flight."""


async def pump_stream(
    run: LiveRun, handle: RunHandle, asks_a_person: Callable[[ApprovalRequired], bool]
) -> dict[str, Any] | None:
    """Publish the events of a run driven here; its terminal event (``None`` when none came).
    A call ``asks_a_person`` says a person decides on is deferred (parked in the checkpoint)."""
    terminal: dict[str, Any] | None = None
    async for event in handle:
        if isinstance(event, ApprovalRequired) and asks_a_person(event):
            event.defer()  # parked in the checkpoint: a person decides on the page
        data = event_dict(event)
        if event.type == "text_delta":
            run.partial_text += str(data.get("delta", ""))
        elif event.type in _VOIDS_PARTIAL:
            # a stop keeps only what the model is saying now: a retried attempt's text is
            # void from its failure on (its output_discarded only comes after the backoff)
            run.partial_text = ""
        if event.terminal:
            last = getattr(getattr(event, "result", None), "last_input_tokens", None)
            if isinstance(last, int) and isinstance(data.get("result"), dict):
                data["result"]["usage"] = {
                    **(data["result"].get("usage") or {}),
                    "last_input_tokens": last,  # the size of the last prompt
                }
            terminal = data
            break
        await run.publish(data)
    try:  # the run has let its lease go once its task is done: settling can take it
        await handle.result()
    except Exception as exc:
        log_end(run, exc)
    return terminal


async def pump_queued(run: LiveRun, events: AsyncIterator[dict[str, Any]]) -> dict[str, Any] | None:
    """Publish the events of a run a worker drives, as the queue reads them from the
    database; its terminal event (``None`` when none came)."""
    async for data in events:
        if data.get("type") in ("run_completed", "run_failed"):
            return data
        await run.publish(data)
    return None


def event_dict(event: Any) -> dict[str, Any]:
    """``event.to_dict()``, with an approval's digest (a tool's images are in its own dict)."""
    data: dict[str, Any] = event.to_dict()
    if isinstance(event, ApprovalRequired):
        data["digest"] = event.digest  # what a decision names to bind to this call
    return data


def log_end(run: LiveRun, exc: Exception) -> None:
    """Log why a run's task ended without its result (a parked run only waits)."""
    if isinstance(exc, ApprovalPending):
        log.info("run %s of chat %s waits for an approval", run.run_id, run.chat_id)
    elif not isinstance(exc, RunCancelled):
        log.warning("run %s of chat %s failed: %s", run.run_id, run.chat_id, exc)
