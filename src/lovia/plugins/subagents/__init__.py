"""Background subagents: ``spawn_subagent`` returns at once, the child runs alongside the
parent, and its report comes back as a message at a later turn (or through
``wait_subagents``)."""

from __future__ import annotations

from .model import ChildSpec, DeliverFn, RunChildFn, SubagentReport
from .plugin import Subagents

__all__ = ["ChildSpec", "DeliverFn", "RunChildFn", "SubagentReport", "Subagents"]
