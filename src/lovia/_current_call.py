"""The tool call running in this task: the run loop sets it around each call
(``lovia._run.effects``), ``RunContext`` reads its idempotency key and step from it, and the
built-in HTTP tools send its key. It names nothing of the run, so a tool that only needs
the key does not import ``RunContext`` (nor, through it, the agent)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

__all__ = ["CURRENT_CALL", "idempotency_headers"]

CURRENT_CALL: ContextVar[Any] = ContextVar("lovia_current_call", default=None)
"""The tool call running in this task (the run loop's ``CallScope``), for
``RunContext.idempotency_key`` and ``RunContext.step``."""


def idempotency_headers() -> dict[str, str]:
    """``{"Idempotency-Key": key}`` for the tool call running in this task, or ``{}``
    outside one: what the built-in HTTP tools add to their requests."""
    scope = CURRENT_CALL.get()
    return {} if scope is None else {"Idempotency-Key": scope.key}
