"""``lovia.handoff``: ``Handoff`` (an agent reachable as a ``transfer_to_<name>`` tool)."""

from __future__ import annotations

from .handoffs import Handoff, handoff_tool

__all__ = ["Handoff", "handoff_tool"]
