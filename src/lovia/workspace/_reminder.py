"""The per-turn reminder of a workspace's background processes."""

from __future__ import annotations

from typing import Any

from ..run_context import RunContext
from ..transcript import InputEntry, TranscriptEntry

__all__ = ["background_process_reminder"]


def _preview(command: str, limit: int = 60) -> str:
    """A command on one line for the reminder; a copy of the reminder's closing tag inside
    it is defused so a command cannot end the reminder early."""
    line = " ".join(command.split()).replace("</system-reminder>", "[/system-reminder]")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def background_process_reminder(ctx: RunContext[Any]) -> list[TranscriptEntry] | None:
    """A view injector: before each model call, one line per background process that runs,
    or that ended without a read or kill having reported it yet. Never stored, so it adds
    nothing to the transcript and is shown again after a retry or a resume."""
    lister = getattr(ctx.workspace, "background_processes", None)
    if lister is None:
        return None
    lines = []
    for p in lister():
        if p.status == "running":
            lines.append(f"- {p.process_id} running: {_preview(p.command)}")
        elif not p.exit_seen:
            code = "unknown" if p.exit_code is None else p.exit_code
            lines.append(
                f"- {p.process_id} {p.status} (exit code {code}): {_preview(p.command)}; "
                f"read_process_output('{p.process_id}') gives its last output"
            )
    if not lines:
        return None
    body = "\n".join(lines)
    text = f"<system-reminder>\nBackground processes:\n{body}\n</system-reminder>"
    return [InputEntry(role="user", content=text)]
