"""Reading a parent run's transcript for the children it started: which are still owed a
report. Spawn, wait and cancel results carry what this needs in their ``raw`` value (stored
with the checkpoint), and a delivered report is a user message that names its child."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ...transcript import InputEntry, ToolResultEntry

__all__ = ["highest_number", "pending_children"]

_DELIVERED = re.compile(r"^\[subagent (t\d+): ")


def _raw(entry: Any) -> dict[str, Any] | None:
    if isinstance(entry, ToolResultEntry) and isinstance(entry.raw, dict):
        return entry.raw
    return None


def pending_children(entries: Sequence[Any], run_id: str | None) -> list[tuple[str, str, str]]:
    """``(id, agent name, prompt)`` of each child this run started whose report has not
    reached the conversation, in the order they were started."""
    started: dict[str, tuple[str, str]] = {}
    for entry in entries:
        raw = _raw(entry)
        if raw is not None and raw.get("run") == run_id:
            task_id = raw.get("subagent")
            if raw.get("kind") == "spawned" and isinstance(task_id, str):
                started[task_id] = (str(raw.get("agent", "")), str(raw.get("prompt", "")))
            for done in raw.get("settled", ()):
                started.pop(str(done), None)
        elif isinstance(entry, InputEntry) and entry.role == "user":
            content = entry.content if isinstance(entry.content, str) else ""
            found = _DELIVERED.match(content)
            if found:
                started.pop(found.group(1), None)
    return [(task_id, agent, prompt) for task_id, (agent, prompt) in started.items()]


def highest_number(entries: Sequence[Any], run_id: str | None) -> int:
    """The largest ``n`` of a ``tn`` this run has started (0 for none)."""
    top = 0
    for entry in entries:
        raw = _raw(entry)
        if raw is not None and raw.get("run") == run_id and raw.get("kind") == "spawned":
            task_id = str(raw.get("subagent", ""))
            if task_id[1:].isdigit():
                top = max(top, int(task_id[1:]))
    return top
