"""``RunOptions``: the per-call options of ``Runner.run`` / ``Runner.stream``."""

from __future__ import annotations

from typing import Any

from ..context.policy import ContextPolicy
from ..reliability import CancelToken, RetryPolicy, RunBudget
from ..steering import Mailbox
from ..stores.run_options import CheckpointOptions
from ..stores.session_protocol import Session
from ..tracing import NoopTracer
from ..usage import Usage

__all__ = ["RunOptions"]


class RunOptions:
    """The per-call options of ``Runner.run`` / ``Runner.stream`` (checked once)."""

    __slots__ = (
        "budget",
        "cancel_token",
        "checkpoint",
        "context_policy",
        "deps",
        "extra_instructions",
        "mailbox",
        "max_turns",
        "output_type",
        "parent_usage",
        "retry",
        "session",
        "session_id",
        "tracer",
    )

    def __init__(
        self,
        *,
        deps: Any = None,
        output_type: Any = None,
        extra_instructions: str | None = None,
        max_turns: int = 50,
        budget: RunBudget | None = None,
        cancel_token: CancelToken | None = None,
        mailbox: Mailbox | None = None,
        retry: RetryPolicy | None = None,
        context_policy: ContextPolicy | None = None,
        session: Session | None = None,
        session_id: str | None = None,
        checkpoint: CheckpointOptions | None = None,
        tracer: Any = None,
    ) -> None:
        self.deps = deps
        self.output_type = output_type
        self.extra_instructions = extra_instructions
        self.max_turns = max_turns
        self.budget = budget
        self.cancel_token = cancel_token if cancel_token is not None else CancelToken()
        self.mailbox = mailbox if mailbox is not None else Mailbox()
        self.retry = retry
        self.context_policy = context_policy
        self.session = session
        self.session_id = session_id
        self.checkpoint = checkpoint
        self.tracer = tracer if tracer is not None else NoopTracer()
        self.parent_usage: Usage | None = None  # an agent-as-tool sub-run counts in its caller's
