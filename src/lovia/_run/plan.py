"""What a run does before it does anything: start, resume, replay or refuse (pure).

The driver loads what the stores hold and asks ``plan``; the answer is a value, so every
branch of ``if_run_exists`` is decided in one place that does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import UserError
from ..stores.checkpoint import RunSnapshot
from ..stores.run_options import CheckpointOptions
from ..transcript import AssistantTextEntry, TranscriptEntry

__all__ = ["Plan", "plan", "segment_answer"]

Action = Literal["new", "resume", "replay", "restart"]


@dataclass(frozen=True, slots=True)
class Plan:
    action: Action
    snapshot: RunSnapshot | None = None


_NEW = Plan("new")  # a value (frozen): one for every run that starts fresh


def plan(opts: CheckpointOptions | None, run_id: str, stored: RunSnapshot | None) -> Plan:
    """Decide under ``if_run_exists`` what to do with what the checkpointer holds."""
    if opts is None:
        return _NEW
    if opts.resume_from is not None:
        snap = opts.resume_from
        return Plan("replay" if snap.status == "completed" else "resume", snap)
    policy = opts.if_run_exists
    if stored is not None and not stored.entries and stored.status != "completed":
        stored = None  # it failed before its input was saved: nothing to continue or refuse
    if stored is None:
        if policy == "resume_only":
            raise UserError(
                f"No snapshot found for run_id={run_id!r}: no stored run to resume",
                hint="use if_run_exists='resume' to start it when it does not exist",
            )
        return Plan("new")
    if policy == "fail":
        raise UserError(
            f"A run already exists for run_id={run_id!r} (status={stored.status!r}).",
            hint="use a new run_id, or if_run_exists='resume' / 'restart'",
        )
    if policy == "restart":
        return Plan("restart")
    if stored.status == "completed":
        return Plan("replay", stored)
    return Plan("resume", stored)


def segment_answer(entries: list[TranscriptEntry]) -> str | None:
    """The final answer text of a stored session segment (``None`` if it has none)."""
    parts: list[str] = []
    for e in reversed(entries):
        if isinstance(e, AssistantTextEntry):
            parts.append(e.content)
        elif parts:
            break
        else:
            return None
    return "".join(reversed(parts)) if parts else None
