"""Guardrails: callables that can refuse a run's input or its final output."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .errors import GuardrailTripped
from .run.context import RunContext

__all__ = ["Guardrail", "check_guardrails"]

Guardrail = Callable[[Any, RunContext[Any]], Any]
"""``(messages_or_output, ctx) -> None | str`` (sync or async); a non-empty string or a raised
``GuardrailTripped`` trips it."""


async def check_guardrails(
    guardrails: Sequence[Guardrail], value: Any, ctx: RunContext[Any], kind: str
) -> None:
    """Run each guardrail in order; raise ``GuardrailTripped`` at the first that trips."""
    for guard in guardrails:
        result = guard(value, ctx)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, str) and result:
            name = getattr(guard, "__name__", type(guard).__name__)
            raise GuardrailTripped(result, hint=f"the {kind} guardrail {name!r} refused this run")
