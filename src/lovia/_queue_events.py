"""A queued run's progress, read from its checkpoint, as the event dicts a live run streams.

A web server that hands a run to a ``lovia worker`` does not see the run's events; it sees
what the worker saves after each step. ``step_events`` turns the entries saved since the
last look into ``message_completed``, ``tool_call_started`` and ``tool_call_completed``
dicts (the shapes of ``Event.to_dict()``), and ``terminal_event`` makes the run's end
(``run_completed`` or ``run_failed``) from its final snapshot. The tokens of the turn being
written come apart, as the worker's notices (``lovia._queue_deltas``).
"""

from __future__ import annotations

from typing import Any

from .transcript import entry_to_dict

__all__ = ["approval_events", "end_events", "step_events", "terminal_event"]

_TURN = ("assistant_text", "reasoning", "tool_call")


def step_events(entries: list[Any], seen: int) -> tuple[list[dict[str, Any]], int]:
    """The events of ``entries[seen:]`` (a run's own entries) and the new ``seen``. A model
    turn still open at the end (its tool results not saved yet) is reported whole."""
    events: list[dict[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    turn: list[dict[str, Any]] = []

    def flush() -> None:
        if not turn:
            return
        events.append({"type": "message_completed", "entries": list(turn)})
        for item in turn:
            if item.get("type") == "tool_call":
                call = {
                    "call_id": item.get("call_id"),
                    "name": item.get("name"),
                    "arguments": item.get("arguments", "{}"),
                }
                calls[str(item.get("call_id"))] = call
                events.append({"type": "tool_call_started", "call": call})
        turn.clear()

    for entry in entries[:seen]:
        if getattr(entry, "type", None) == "tool_call":
            calls[entry.call_id] = {
                "call_id": entry.call_id,
                "name": entry.name,
                "arguments": entry.arguments,
            }
    for entry in entries[seen:]:
        item = entry_to_dict(entry)
        kind = item.get("type")
        if kind in _TURN:
            turn.append(item)
            continue
        flush()
        if kind == "tool_result":
            call_id = str(item.get("call_id"))
            events.append(
                {
                    "type": "tool_call_completed",
                    "call": calls.get(call_id, {"call_id": call_id, "name": None}),
                    "output": item.get("output", ""),
                    "is_error": bool(item.get("is_error")),
                }
            )
    flush()
    return events, len(entries)


def approval_events(snapshot: Any) -> list[dict[str, Any]]:
    """``approval_required`` for each call the parked run waits for a decision on."""
    out = []
    for p in getattr(snapshot, "pending_approvals", ()) or ():
        if p.decision is not None:
            continue
        out.append(
            {
                "type": "approval_required",
                "call": {"call_id": p.call_id, "name": p.tool_name, "arguments": p.arguments},
                "run_id": snapshot.run_id,
                "digest": p.digest,
            }
        )
    return out


def terminal_event(state: dict[str, Any], snapshot: Any) -> dict[str, Any]:
    """The end of a queued run in ``state`` (its queue row), with its final snapshot."""
    kind = state.get("state")
    result = state.get("result") or {}
    if kind == "completed":
        usage: Any = getattr(snapshot, "usage", None)
        return {
            "type": "run_completed",
            "result": {
                "run_id": state.get("run_id"),
                "output": result.get("output"),
                "usage": usage.to_dict() if hasattr(usage, "to_dict") else {},
                "entries": [entry_to_dict(e) for e in getattr(snapshot, "entries", [])],
                "turns": result.get("turns"),
                "started_at": result.get("started_at"),
                "finished_at": result.get("finished_at"),
            },
        }
    if kind == "awaiting_approval":
        error = {"type": "ApprovalPending", "message": "the run waits for an approval"}
    elif kind == "cancelled":
        error = {"type": "RunCancelled", "message": "the run was cancelled"}
    else:
        error = dict(getattr(snapshot, "error", None) or {})
        error.setdefault("type", "RuntimeError")
        error.setdefault("message", str(result.get("error") or "the run failed on a worker"))
    return {"type": "run_failed", "error": error}


def end_events(state: dict[str, Any], snapshot: Any) -> list[dict[str, Any]]:
    """The last events of a run in a final state: a parked run's ``approval_required``
    events, then its terminal event."""
    head = approval_events(snapshot) if state.get("state") == "awaiting_approval" else []
    return [*head, terminal_event(state, snapshot)]
