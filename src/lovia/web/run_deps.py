"""``create_app(run_deps=fn)``: each served run's ``RunContext.deps``, built per run.

``fn(trigger)`` (sync or async) is called before anything of the run is written; what it
returns is the run's ``deps``. ``trigger`` says which chat and agent, why the run started
(``source``), the request that started it (after ``auth=`` ran: where identity lives) and
the page's ``client_context`` (UI state the browser controls: never identity). Raising an
``HTTPException`` there refuses the run, and nothing is written.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..agent import Agent

__all__ = [
    "MAX_CLIENT_CONTEXT_BYTES",
    "RUN_CLIENT",
    "RUN_SERVER",
    "RunDepsFn",
    "RunTrigger",
    "build_run_deps",
    "context_size",
]

log = logging.getLogger("lovia.web")

MAX_CLIENT_CONTEXT_BYTES = 64 * 1024
"""The largest client context a request may carry, as JSON bytes."""

RUN_CLIENT: ContextVar[Mapping[str, Any] | None] = ContextVar("lovia_run_client", default=None)
"""The client context of the served run on this task (set as the run starts): a schedule
the run's agent makes fires in it, a chat it starts runs in it."""

RUN_SERVER: ContextVar[Any] = ContextVar("lovia_run_server", default=None)
"""The server (its ``RouterDeps``) driving the served run on this task: what the
``start_session`` tool opens a new chat through. ``None`` outside a served run."""


@dataclass(frozen=True)
class RunTrigger:
    """Why a served run started, as ``run_deps`` sees it.

    ``source``: ``"user"`` (a message, or a reconnect that resumes a run),
    ``"schedule:<id>"``, ``"subagent:<chat>"``, ``"subagent-report:<task>"`` or
    ``"spawn:<chat>"``. ``request`` is ``None`` when nobody asked for the run (a schedule).
    ``resumed`` is true when the run continues from its checkpoint."""

    session_id: str
    agent: Agent
    source: str
    request: Request | None = None
    client_context: Mapping[str, Any] = field(default_factory=dict)
    resumed: bool = False


RunDepsFn = Callable[[RunTrigger], "Any | Awaitable[Any]"]
"""``run_deps(trigger) -> deps``, sync or async."""

_warned = False


async def build_run_deps(fn: RunDepsFn | None, trigger: RunTrigger) -> Any:
    """``fn(trigger)``, awaited when it returns an awaitable; ``None`` without ``fn`` (a
    client context is then ignored, with one warning in the log)."""
    global _warned
    if fn is None:
        if trigger.client_context and not _warned:
            _warned = True
            log.warning(
                "a request carried a client context, but create_app has no run_deps=: "
                "the context is ignored"
            )
        return None
    out = fn(trigger)
    if inspect.isawaitable(out):
        out = await out
    return out


def context_size(value: Mapping[str, Any]) -> int:
    """A client context's size, as the limit counts it (UTF-8 JSON bytes)."""
    return len(json.dumps(value, ensure_ascii=False).encode())
