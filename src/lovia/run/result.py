"""``RunResult``: what a finished run returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..transcript import TranscriptEntry, entries_to_messages, entry_to_dict
from ..usage import Usage

if TYPE_CHECKING:
    from ..agent import Agent
    from ..messages import Message

__all__ = ["RunResult"]


@dataclass(frozen=True, repr=False)
class RunResult:
    """The output of a run and how it got there.

    ``entries`` are this run's own entries (from its input on; no system prompt, no session
    history). ``finish_reason`` is the provider's last finish reason, ``None`` on a replay.
    """

    output: Any
    entries: list[TranscriptEntry]
    usage: Usage
    turns: int
    finish_reason: str | None
    final_agent: Agent
    run_id: str
    session_id: str | None = None
    replayed: bool = field(default=False)
    last_input_tokens: int | None = None

    @property
    def messages(self) -> list[Message]:
        """This run's entries as chat messages."""
        return entries_to_messages(self.entries)

    def __repr__(self) -> str:
        shown = repr(self.output)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return (
            f"RunResult(output={shown}, agent={self.final_agent.name!r}, "
            f"turns={self.turns}, tokens={self.usage.total_tokens})"
        )

    def to_dict(self) -> dict[str, Any]:
        output = self.output
        if isinstance(output, BaseModel):
            output = output.model_dump(mode="json")
        return {
            "output": output,
            "entries": [entry_to_dict(e) for e in self.entries],
            "usage": self.usage.to_dict(),
            "turns": self.turns,
            "finish_reason": self.finish_reason,
            "final_agent": self.final_agent.name,
            "run_id": self.run_id,
            "session_id": self.session_id,
            "replayed": self.replayed,
        }
