"""The run's final output: the last answer's text, parsed into the agent's ``output_type``
(and its JSON form for the checkpoint), or revived from a checkpoint on replay."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from ..agent import Agent
from ..errors import OutputValidationError
from ..output import json_candidates, repair_strategy
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from .narrate import LOOP_LOG

__all__ = ["ask_for_repair", "final_text", "parse_output", "revive_output"]


def final_text(entries: list[TranscriptEntry]) -> str:
    """The text of the last model message (the entries after the last tool result/input)."""
    parts: list[str] = []
    for e in reversed(entries):
        if isinstance(e, AssistantTextEntry):
            parts.append(e.content)
        elif isinstance(e, (ToolResultEntry, InputEntry, ToolCallEntry)):
            break
    return "".join(reversed(parts))


if TYPE_CHECKING:
    from .run import Run

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
        name = getattr(output_type, "__name__", str(output_type))
        try:  # 0.9.119's words, which users' tests match on
            json.loads(document)
            message = f"Failed to parse output as {name}: {exc}"
        except ValueError as bad:
            message = f"Model output is not valid JSON: {bad}"
        raise OutputValidationError(
            message,
            hint="keep Agent(output_repair=True) so the model gets another try, or describe "
            "the expected JSON in the instructions",
            raw=text if len(text) <= 200 else text[:200] + "…",
            output_type_name=name,
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


async def ask_for_repair(d: Run, answer: str) -> bool:
    """A final answer that does not fit ``output_type``: when the agent's ``output_repair``
    gives a prompt for it, add that as a user message (the next turn answers it)."""
    agent = d.state.agent
    output_type = d.kit.output_type(agent)
    if output_type is str:
        return False
    try:
        parse_output(agent, output_type, answer)
        return False
    except OutputValidationError as exc:
        strategy = repair_strategy(agent.output_repair)
        if strategy is None:
            return False  # _finish raises it
        d.repairs += 1
        prompt = strategy.build_prompt(exc, d.repairs)
        if prompt is not None:  # 0.9.119's warning, once per repair asked for
            LOOP_LOG.warning(
                "run.output_repair: agent=%r attempt=%d error=%s",
                agent.name,
                d.repairs,
                (str(exc).splitlines() or [""])[0][:200],
            )
    if prompt is None:
        return False
    d.state.entries.append(InputEntry(role="user", content=prompt))
    await d.save()
    return True
