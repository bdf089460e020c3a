"""Checks ``Agent(...)`` runs on fields whose wrong type would otherwise fail only when the
agent runs, far from the line that set it, with an error that does not name the field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .errors import UserTypeError, UserValueError

__all__ = ["check_guardrails", "check_hooks_and_retry", "check_list_field", "check_timeout"]

_EXAMPLES = {
    "tools": "tools=[my_tool] (functions decorated with @tool, or Tool objects)",
    "handoffs": "handoffs=[other_agent] (agents, or Handoff(agent, ...))",
    "input_guardrails": "input_guardrails=[my_check] (functions (input, ctx) -> verdict)",
    "output_guardrails": "output_guardrails=[my_check] (functions (output, ctx) -> verdict)",
    "plugins": "plugins=[my_plugin]",
}


def check_list_field(agent: str, field: str, value: Any) -> None:
    """A list field given one item, a string, or something that is no list at all."""
    if value is None:
        return
    single = callable(value) or isinstance(value, str | bytes) or hasattr(value, "name")
    if single or not isinstance(value, Iterable):
        raise UserTypeError(
            f"agent {agent!r}: {field} must be a list, got {type(value).__name__}",
            hint=f"pass a list even for one: {_EXAMPLES[field]}",
        )


def check_guardrails(agent: str, field: str, items: Sequence[Any]) -> None:
    for i, item in enumerate(items):
        if not callable(item):
            raise UserTypeError(
                f"agent {agent!r}: {field}[{i}] must be a function, got {type(item).__name__}",
                hint=f"list guardrail functions: {_EXAMPLES[field]}",
            )


def check_hooks_and_retry(agent: str, hooks: Any, retry: Any) -> None:
    if hooks is not None and not callable(getattr(hooks, "dispatch", None)):
        raise UserTypeError(
            f"agent {agent!r}: hooks must be an AgentHooks, got {type(hooks).__name__}",
            hint="hooks = AgentHooks(); @hooks.on(ToolCallStarted) ...; Agent(..., hooks=hooks)",
        )
    if retry is not None and not all(
        hasattr(retry, a) for a in ("max_attempts", "retry_on", "delay")
    ):
        raise UserTypeError(
            f"agent {agent!r}: retry must be a RetryPolicy or None, got {type(retry).__name__}",
            hint="retry=RetryPolicy(max_attempts=3), or retry=None to turn retries off",
        )


def check_timeout(agent: str, timeout: Any) -> None:
    if timeout is None:
        return
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise UserTypeError(
            f"agent {agent!r}: default_tool_timeout must be a number of seconds or None, "
            f"got {type(timeout).__name__}",
            hint="default_tool_timeout=30 (seconds), or None for no limit",
        )
    if not timeout > 0:  # NaN too
        raise UserValueError(
            f"agent {agent!r}: default_tool_timeout must be above 0 seconds, got {timeout!r}",
            hint="default_tool_timeout=30 (seconds), or None for no limit",
        )
