"""The text the model reads for each workspace tool's result.

Each renderer turns its own result type into text and hands anything else back unchanged
(a result of another type goes on to the default rendering)."""

from __future__ import annotations

from typing import Any

from ..run_context import RunContext
from .types import (
    CommandResult,
    DirEntry,
    EditResult,
    FileChange,
    FileContent,
    GrepMatch,
    ProcessOutput,
    ProcessStart,
)

__all__ = [
    "render_command_result",
    "render_edit_result",
    "render_entries",
    "render_file_change",
    "render_file_content",
    "render_matches",
    "render_process_output",
]


def _all(result: Any, kind: type) -> bool:
    return isinstance(result, list) and all(isinstance(item, kind) for item in result)


def render_file_content(result: Any, ctx: RunContext[Any]) -> Any:
    if not isinstance(result, FileContent):
        return result
    if result.total_lines == 0:
        return f"{result.path} (empty file)"
    if not result.content:
        return (
            f"{result.path}: start line {result.start} is past the last line "
            f"({result.total_lines})."
        )
    head = f"{result.path} (lines {result.start}-{result.end} of {result.total_lines})"
    return f"{head}\n{result.content}"


def render_entries(result: Any, ctx: RunContext[Any]) -> Any:
    if not _all(result, DirEntry):
        return result
    if not result:
        return "(no entries)"
    lines = []
    for e in result:
        line = f"{e.path}/" if e.is_dir else e.path
        if not e.is_dir and e.size is not None:
            line += f"  ({e.size} bytes)"
        if e.symlink_target is not None:
            line += f"  -> {e.symlink_target}"
        lines.append(line)
    if getattr(result, "truncated", False):
        lines.append(
            f"… (truncated at {len(result)} entries; narrow path or pattern, or raise max_results)"
        )
    return "\n".join(lines)


def render_matches(result: Any, ctx: RunContext[Any]) -> Any:
    if not _all(result, GrepMatch):
        return result
    if not result:
        return "(no matches)"
    lines = [f"{m.path}:{m.line}: {m.text}" for m in result]
    if getattr(result, "truncated", False):
        lines.append(
            f"… (truncated at {len(result)} matches; narrow the pattern, path or glob, or "
            "raise max_matches)"
        )
    return "\n".join(lines)


def render_file_change(result: Any, ctx: RunContext[Any]) -> Any:
    if not isinstance(result, FileChange):
        return result
    if not result.ok:
        return result.message or "no change"
    if result.action == "unchanged":
        return result.message or f"{result.path} unchanged"
    return f"{result.action} {result.path} ({result.bytes_written} bytes)"


def render_edit_result(result: Any, ctx: RunContext[Any]) -> Any:
    if not isinstance(result, EditResult):
        return result
    if not result.ok:
        return result.message or "edit failed"
    if not result.changed:
        return f"{result.path}: no change (the old and new text are the same)"
    s = "" if result.replacements == 1 else "s"
    return f"edited {result.path} ({result.replacements} replacement{s})"


def render_command_result(result: Any, ctx: RunContext[Any]) -> Any:
    if isinstance(result, ProcessStart):
        pid = result.process_id
        return (
            f"started background process {pid} (pid {result.pid}). Read its output with "
            f"read_process_output('{pid}'); stop it with kill_process('{pid}')."
        )
    if not isinstance(result, CommandResult):
        return result
    parts = ["command timed out" if result.timed_out else f"exit code: {result.exit_code}"]
    out, err = result.stdout.rstrip("\n"), result.stderr.rstrip("\n")
    if out.strip():
        parts.append(out)
    if err.strip():
        parts.append(err if result.timed_out and not out.strip() else f"--- stderr ---\n{err}")
    if len(parts) == 1 and not result.timed_out:
        parts.append("(no output)")
    return "\n".join(parts)


def render_process_output(result: Any, ctx: RunContext[Any]) -> Any:
    if not isinstance(result, ProcessOutput):
        return result
    head = f"process {result.process_id}: "
    if result.status == "exited":
        head += f"exited with code {result.exit_code}"
    else:
        head += result.status
    parts = [head]
    if result.truncated:
        parts.append(
            "[... earlier output dropped: only the newest output is kept between reads ...]"
        )
    body = result.output.rstrip("\n")
    parts.append(body if body.strip() else "(no new output)")
    return "\n".join(parts)
