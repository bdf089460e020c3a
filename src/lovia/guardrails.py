"""Guardrails: callables that can refuse a run's input or its final output."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .errors import GuardrailTripped
from .run_context import RunContext

__all__ = ["Guardrail", "GuardrailFn", "check_guardrails"]

Guardrail = Callable[[Any, RunContext[Any]], Any]
"""``(messages_or_output, ctx) -> None | bool | str`` (sync or async). ``None``, ``False`` or
``""`` lets the value pass; a non-empty string or ``True`` trips it, as does raising
``GuardrailTripped``. Input guardrails get what the first model call will see as
``list[Message]`` (system message, session history, the new input); output guardrails get the
final output. A verdict trips with ``GuardrailTripped`` whose ``guardrail`` names the callable."""
GuardrailFn = Guardrail


async def check_guardrails(
    guardrails: Sequence[Guardrail], value: Any, ctx: RunContext[Any], kind: str
) -> None:
    """Run each guardrail in order; raise ``GuardrailTripped`` at the first that trips."""
    for guard in guardrails:
        verdict = guard(value, ctx)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if not verdict:
            continue
        # the verdict is the reason; the guardrail's name is kept for logs and handlers
        name = getattr(guard, "__name__", type(guard).__name__)
        if verdict is True:
            raise GuardrailTripped(f"{kind} guardrail rejected the value", guardrail=name)
        raise GuardrailTripped(f"{kind} guardrail: {verdict}", guardrail=name)
