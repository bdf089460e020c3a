"""``recall_tool_result``: the tool that gives the model back an output the context view
shortened. It lives with the context policies (``lovia.context``), which add it to a run
themselves; this is the factory under its ``lovia.tools`` name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Tool

if TYPE_CHECKING:
    from ..context.results import ResultStore

__all__ = ["recall_tool_result"]


def recall_tool_result(store: ResultStore | None) -> Tool:
    """Build the ``recall_tool_result`` tool over ``store``: it reads the archived output
    first, then the run's transcript (``store=None``: the transcript only)."""
    from ..context.recall import make_recall_tool  # the context layer imports tools

    return make_recall_tool(store)
