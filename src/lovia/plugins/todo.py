"""``Todo``: a checklist the model keeps for multi-step work, shown back to it every turn.

The list lives in the transcript, not in a file: every ``todo_write`` call carries the whole
list, so the newest valid call *is* the current state. A resumed run, a handoff target or a
later run of the same session therefore finds the list as it was by reading its entries
(``todos_from_entries``); nothing else needs saving.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from ..run_context import RunContext
from ..tools import Tool, tool
from ..transcript import InputEntry, ToolCallEntry, TranscriptEntry
from .base import PluginInstance

__all__ = ["Todo", "TodoItem", "TodoList", "TodoStatus", "render_todos", "todos_from_entries"]

log = logging.getLogger("lovia.plugins")

TodoStatus = Literal["pending", "in_progress", "completed"]

_BOXES: dict[str, str] = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

DEFAULT_INSTRUCTIONS = (
    "## Todo\n"
    "For work with several steps (or a request that asks for several things), keep a "
    "checklist with the `todo_write` tool: write the plan before you begin, keep exactly one "
    "item in_progress, and mark an item completed the moment it is done. Every call sends "
    "the whole list. Skip the checklist for simple one-step requests. The current list is "
    "shown to you at each turn."
)


class TodoItem(BaseModel):
    """One entry of the checklist: what the model sends and what a host reads back."""

    content: str = Field(
        description="What the step is, as a short imperative line (e.g. 'Write the tests')."
    )
    status: TodoStatus = Field(default="pending", description="pending, in_progress or completed.")
    active_form: str | None = Field(
        default=None,
        description="The step in the present tense, shown while it is in progress "
        "(e.g. 'Writing the tests').",
    )


class TodoList:
    """The current checklist of one run. ``replace`` swaps in a whole new list."""

    def __init__(self) -> None:
        self.items: list[TodoItem] = []

    def replace(self, items: Iterable[TodoItem]) -> list[TodoItem]:
        """Make ``items`` the list (copied, with at most one in progress) and return a copy
        the caller may change freely."""
        self.items = _normalized(items)
        return [item.model_copy() for item in self.items]

    def rehydrate_from(self, entries: Sequence[TranscriptEntry], *, tool_name: str) -> None:
        """Set the list to the newest valid ``tool_name`` call found in ``entries``."""
        self.items = todos_from_entries(entries, tool_name=tool_name)


def _normalized(items: Iterable[TodoItem]) -> list[TodoItem]:
    # Only one step can be under way: any later in_progress items go back to pending, so a
    # sloppy update still lands instead of being refused as a whole.
    out: list[TodoItem] = []
    started = False
    for item in items:
        copy = item.model_copy()
        if copy.status == "in_progress":
            if started:
                copy.status = "pending"
            started = True
        out.append(copy)
    return out


def render_todos(items: Sequence[TodoItem]) -> str:
    """The checklist as text, one ``[x]`` / ``[~]`` / ``[ ]`` line per item (an item in
    progress shows its ``active_form`` when it has one)."""
    lines = []
    for item in items:
        label = item.active_form if item.status == "in_progress" and item.active_form else None
        lines.append(f"{_BOXES[item.status]} {label or item.content}")
    return "\n".join(lines)


def _items_of(call: ToolCallEntry) -> list[TodoItem] | None:
    try:
        args = json.loads(call.arguments or "{}")
        raw = args.get("todos") if isinstance(args, dict) else None
        if not isinstance(raw, list):
            return None
        return [TodoItem.model_validate(item) for item in raw]
    except (ValueError, ValidationError):
        return None


def todos_from_entries(
    entries: Sequence[TranscriptEntry], *, tool_name: str = "todo_write"
) -> list[TodoItem]:
    """The checklist as the newest valid ``tool_name`` call in ``entries`` left it (``[]``
    when there is none). A malformed call never changed the list, so it is passed over."""
    for entry in reversed(entries):
        if isinstance(entry, ToolCallEntry) and entry.name == tool_name:
            items = _items_of(entry)
            if items is not None:
                return _normalized(items)
    return []


def _render_result(value: Any, ctx: RunContext[Any]) -> str:
    if not value:
        return "The todo list is now empty."
    return "Todo list updated:\n" + render_todos(value)


@dataclass
class Todo:
    """The ``todo_write`` tool plus a per-turn reminder of the current list.

    ``inject=False`` keeps the tool without the reminder; ``instructions=None`` leaves the
    usage guidance out of the system prompt; ``tool_name`` renames the tool when another one
    already owns ``todo_write``.
    """

    tool_name: str = "todo_write"
    inject: bool = True
    instructions: str | None = DEFAULT_INSTRUCTIONS
    name: str = "todos"

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        store = TodoList()
        loaded = False
        tool_name = self.tool_name

        def current(ctx: RunContext[Any]) -> list[TodoItem]:
            # Read from the transcript once, when the run's entries are there (they are
            # not yet at setup): this is how a resumed run or a handoff target finds the list.
            nonlocal loaded
            if not loaded:
                store.rehydrate_from(list(ctx.entries), tool_name=tool_name)
                loaded = True
            return store.items

        async def write(todos: list[TodoItem]) -> list[TodoItem]:
            nonlocal loaded
            loaded = True
            return store.replace(todos)

        write_tool: Tool = tool(
            write,
            name=tool_name,
            description=(
                "Keep the checklist for the current task. Send the WHOLE list every time: it "
                "replaces the previous one. Each item has a short one-line `content`, a "
                "`status` (pending, in_progress or completed) and, optionally, an "
                "`active_form` shown while it is in progress."
            ),
            result_renderer=_render_result,
        )
        write_tool.parameters["properties"]["todos"]["description"] = (
            "The complete checklist; it replaces the previous one."
        )

        def remind(ctx: RunContext[Any]) -> list[TranscriptEntry] | None:
            items = current(ctx)
            if not items:
                return None
            body = render_todos(items)
            return [
                InputEntry(
                    role="user",
                    content="<system-reminder>\nThe todo list as it stands (update it as "
                    f"you go; one item in_progress at a time):\n{body}\n</system-reminder>",
                )
            ]

        guidance = self.instructions
        if guidance is DEFAULT_INSTRUCTIONS and tool_name != "todo_write":
            guidance = guidance.replace("`todo_write`", f"`{tool_name}`")
        return PluginInstance(
            tools=[write_tool],
            view_injectors=[remind] if self.inject else [],
            instructions=guidance,
        )
