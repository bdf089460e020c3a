"""Plugins: bundles of tools, instructions, hooks and guardrails an agent takes into each run.

``Agent(plugins=[...])`` activates every plugin once per run (and once per agent reached by a
handoff): ``await plugin.setup(ctx)`` returns a fresh ``PluginInstance`` whose contributions
join the agent's own, and whose ``aclose()`` runs when the run ends.
"""

from __future__ import annotations

from .base import Plugin, PluginInstance, ViewInjector
from .memory import (
    Doc,
    Embedder,
    FileNotesStore,
    Fusable,
    Hit,
    HybridIndex,
    Index,
    KeywordIndex,
    Memory,
    NotesStore,
    OpenAIEmbedder,
    VectorIndex,
)
from .skills import (
    DirectorySkillSource,
    Skill,
    SkillCatalog,
    SkillFilter,
    SkillMetadata,
    SkillNotFoundError,
    Skills,
    SkillsError,
    SkillSource,
)
from .subagents import ChildSpec, DeliverFn, RunChildFn, SubagentReport, Subagents
from .todo import Todo, TodoItem, TodoList, TodoStatus, render_todos, todos_from_entries

__all__ = [
    "ChildSpec",
    "DeliverFn",
    "DirectorySkillSource",
    "Doc",
    "Embedder",
    "FileNotesStore",
    "Fusable",
    "Hit",
    "HybridIndex",
    "Index",
    "KeywordIndex",
    "Memory",
    "NotesStore",
    "OpenAIEmbedder",
    "Plugin",
    "PluginInstance",
    "RunChildFn",
    "Skill",
    "SkillCatalog",
    "SkillFilter",
    "SkillMetadata",
    "SkillNotFoundError",
    "SkillSource",
    "Skills",
    "SkillsError",
    "SubagentReport",
    "Subagents",
    "Todo",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "VectorIndex",
    "ViewInjector",
    "render_todos",
    "todos_from_entries",
]
