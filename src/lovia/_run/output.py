"""The run's final output: the last answer's text, parsed into the agent's ``output_type``
(and its JSON form for the checkpoint), or revived from a checkpoint on replay."""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..agent import Agent
from ..errors import OutputValidationError
from ..output import json_candidates
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

__all__ = ["final_text", "parse_output", "revive_output"]


def final_text(entries: list[TranscriptEntry]) -> str:
    """The text of the last model message (the entries after the last tool result/input)."""
    parts: list[str] = []
    for e in reversed(entries):
        if isinstance(e, AssistantTextEntry):
            parts.append(e.content)
        elif isinstance(e, (ToolResultEntry, InputEntry, ToolCallEntry)):
            break
    return "".join(reversed(parts))


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(output_type: Any) -> TypeAdapter[Any]:
    found = _ADAPTERS.get(output_type)
    if found is None:
        found = _ADAPTERS[output_type] = TypeAdapter(output_type)
    return found


def parse_output(agent: Agent, output_type: Any, text: str) -> tuple[Any, Any]:
    """The final output as ``output_type`` and its JSON form for the checkpoint."""
    if output_type is str:
        return text, text
    adapter = _adapter(output_type)
    candidates = json_candidates(text)
    document = next((c for c in candidates if _is_json(c)), candidates[-1])
    try:
        value = adapter.validate_json(document)
    except ValidationError as exc:
        raise OutputValidationError(
            f"the final answer of agent {agent.name!r} does not fit its output_type: "
            f"{exc.errors()[0].get('msg') if exc.errors() else exc}",
            hint="keep Agent(output_repair=True) so the model gets another try, or describe "
            "the expected JSON in the instructions",
            raw=text if len(text) <= 200 else text[:200] + "…",
            output_type_name=getattr(output_type, "__name__", str(output_type)),
        ) from exc
    return value, adapter.dump_python(value, mode="json")


def revive_output(agent: Agent, output_type: Any, stored: Any) -> Any:
    if output_type is str or stored is None:
        return stored
    try:
        return _adapter(output_type).validate_python(stored)
    except ValidationError as exc:
        raise OutputValidationError(
            f"the stored output no longer fits the output_type of agent {agent.name!r}",
            hint="replay with the agent version that produced it, or restart the run",
        ) from exc


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
