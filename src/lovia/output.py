"""Structured output: how a run gets a typed final answer, and what it does when it does not.

A provider with native JSON-schema output gets the schema in the request. Any other provider
gets an "Output format" block at the end of the system prompt. Either way the final answer is
read leniently (as it is, without a code fence, or the first JSON object or array in prose)
and validated against ``output_type``. An answer that does not fit goes to the agent's
``output_repair``: ``True`` (the default) asks the model once more, quoting the error;
``False`` fails at once; an ``OutputRepairStrategy`` decides per attempt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import TypeAdapter

from .errors import OutputValidationError, UserError
from .tools.base import strip_titles

__all__ = [
    "DefaultOutputRepair",
    "OutputRepairStrategy",
    "json_candidates",
    "output_instructions",
    "output_schema",
    "repair_strategy",
]


@runtime_checkable
class OutputRepairStrategy(Protocol):
    """``build_prompt(error, attempt)``: the user message that asks the model for a better
    answer after ``error`` (``attempt`` counts from 1), or ``None`` to give up and raise it.
    Every repair costs a turn, counted by ``max_turns`` and the budget."""

    def build_prompt(self, exc: OutputValidationError, attempt: int) -> str | None: ...


@dataclass(frozen=True)
class DefaultOutputRepair:
    """Ask again up to ``max_attempts`` times, quoting what was wrong."""

    max_attempts: int = 1

    def build_prompt(self, exc: OutputValidationError, attempt: int) -> str | None:
        if attempt > self.max_attempts:
            return None
        return (
            f"Your previous response could not be parsed into the expected output type: {exc}."
            " Reply again with only the JSON document that matches the required schema:"
            " no explanation, no markdown, no code fence."
        )


def repair_strategy(setting: Any) -> OutputRepairStrategy | None:
    """The strategy an agent's ``output_repair`` names (``None``: fail at once)."""
    if setting is True:
        return DefaultOutputRepair()
    if setting is False or setting is None:
        return None
    if isinstance(setting, OutputRepairStrategy):
        return setting
    raise UserError(
        f"output_repair must be True, False or an object with build_prompt(exc, attempt),"
        f" got {type(setting).__name__}",
        hint="Agent(output_repair=True) asks the model once more when its answer does not fit",
    )


def output_schema(output_type: Any) -> dict[str, Any]:
    """The JSON schema of ``output_type`` (a pydantic model, dataclass, ``TypedDict`` or any
    type pydantic reads) as a model is shown it: without the titles pydantic derives from
    class and field names."""
    schema: dict[str, Any] = strip_titles(TypeAdapter(output_type).json_schema())
    return schema


def output_instructions(output_type: Any) -> str:
    """The system prompt block that asks for a JSON answer shaped like ``output_type``."""
    schema = output_schema(output_type)
    return (
        "## Output format\n"
        "When the task is done, your final reply must be one JSON document that fits this"
        " JSON Schema:\n\n"
        f"{json.dumps(schema, ensure_ascii=False)}\n\n"
        "Reply with the JSON document alone: no explanation around it, no markdown code"
        " fence. Call tools as needed before that."
    )


def json_candidates(text: str) -> list[str]:
    """What a final answer may hold as JSON, in the order to try: the text as it is, the
    text without a wrapping code fence, and the first balanced object or array in it."""
    found = [text]
    unfenced = _without_fence(text)
    if unfenced != text:
        found.append(unfenced)
    embedded = _first_json_block(text)
    if embedded is not None and embedded not in found:
        found.append(embedded)
    return found


def _without_fence(text: str) -> str:
    stripped = text.strip()
    if not stripped.startswith("```"):
        return stripped
    body = stripped.split("\n", 1)[1] if "\n" in stripped else ""
    body = body.rstrip()
    return body[:-3].strip() if body.endswith("```") else body.strip()


def _first_json_block(text: str) -> str | None:
    """The first ``{...}`` or ``[...]`` whose brackets balance, strings taken into account."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    opener = text[start]
    closer = "}" if opener == "{" else "]"
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None
