"""``RunResult``: what a finished run returns (defined below the runtime)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._run_types import RunResult
from ..transcript import TranscriptEntry
from ..usage import Usage

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["RunResult", "run_result"]


def run_result(
    *,
    output: Any,
    entries: list[TranscriptEntry],
    usage: Usage,
    turns: int,
    finish_reason: str | None,
    final_agent: Agent,
    run_id: str,
    session_id: str | None = None,
    replayed: bool = False,
    last_input_tokens: int | None = None,
    started_at: float | None = None,
    finished_at: float | None = None,
) -> RunResult:
    """``RunResult(...)`` with the same fields, built without the frozen dataclass's
    ``object.__setattr__`` per field (every run ends here)."""
    result = object.__new__(RunResult)
    result.__dict__.update(
        output=output,
        entries=entries,
        usage=usage,
        turns=turns,
        finish_reason=finish_reason,
        final_agent=final_agent,
        run_id=run_id,
        session_id=session_id,
        replayed=replayed,
        last_input_tokens=last_input_tokens,
        started_at=started_at,
        finished_at=finished_at,
    )
    return result
