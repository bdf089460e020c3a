"""The toolkit of the assistant ``lovia web`` builds itself (as 0.9.119's: a workspace,
todos, scheduling, memory, skills, background subagents, the clock, the web, questions to the
person and what the page draws), and the ``config.json`` it reads its settings from."""

from __future__ import annotations

import argparse
import logging
from typing import Any

log = logging.getLogger("lovia.web")

__all__ = ["equip", "read_settings", "search_tools"]


def equip(
    agent: Any,
    args: argparse.Namespace,
    doc: dict[str, Any] | None = None,
    *,
    store: Any = None,
    questions: Any = None,
) -> Any:
    """The default assistant with its toolkit, as the flags shape it: a workspace (file and
    shell tools) in ``--workspace``, todos, scheduled runs and new chats in ``store`` (the
    server's ``ChatStore``), long-term memory in ``--memory-dir``, the skills of ``doc``'s
    (``config.json``'s) skill directories, background subagents; the clock, web pages and
    web search (``doc``'s search backend), questions to the person through ``questions`` (a
    ``HumanChannel``), charts, tables and HTML pages; and instructions that say the answer is
    read on the page, and today's date."""
    from pathlib import Path

    from ..plugins import Memory, Skills, Subagents, Todo
    from ..tools import ask_human, now, web_fetch
    from ..tools.time import current_date
    from ..web import SURFACE_NOTE, show_chart, show_html, show_table
    from ..web.api_config import DEFAULT_SKILL_DIRS
    from ..web.scheduling import Scheduling
    from ..workspace import Workspace

    if doc is None:
        doc = read_settings()
    agent = _with_tools(agent, [now, web_fetch(), *search_tools(doc)])
    agent = agent.with_instructions(lambda _ctx: SURFACE_NOTE)
    agent = agent.with_instructions(current_date())
    plugins: list[Any] = [*agent.plugins, Todo()]
    if store is not None:
        plugins.append(Scheduling(store))
    if not args.no_memory:
        plugins.append(Memory(args.memory_dir))
    found = doc.get("skills")
    dirs = found.get("dirs", DEFAULT_SKILL_DIRS) if isinstance(found, dict) else None
    dirs = dirs if isinstance(dirs, list) else DEFAULT_SKILL_DIRS
    roots = [d for d in dirs if isinstance(d, str) and Path(d).expanduser().is_dir()]
    if roots:  # a folder that does not exist is skipped, never an error
        plugins.append(Skills(*(Path(d).expanduser() for d in roots)))
    workspace = (
        None if args.no_workspace else Workspace.local(args.workspace, mode=args.workspace_mode)
    )
    if not args.no_subagents:
        # a child works alone in the background: the tools and plugins that talk to the
        # person, schedule, remember or spawn stay with the parent
        child = agent.clone(
            name=f"{agent.name}-sub",
            plugins=[p for p in plugins if isinstance(p, (Skills, Todo))],
            handoffs=(),
            workspace=workspace,
        )
        plugins.append(Subagents([child]))
    parent_only = [ask_human(questions)] if questions is not None else []
    agent = _with_tools(agent, [*parent_only, show_chart, show_table, show_html])
    return agent.clone(plugins=plugins, workspace=workspace)


def _with_tools(agent: Any, tools: list[Any]) -> Any:
    """``agent`` with ``tools`` after its own (a tool of its own of the same name wins)."""
    known = {t.name for t in agent.tools}
    return agent.clone(tools=[*agent.tools, *(t for t in tools if t.name not in known)])


def search_tools(doc: dict[str, Any]) -> list[Any]:
    """``web_search`` on ``doc``'s (``config.json``'s) backend: Tavily when it has a key
    (``auto``'s choice too), else DuckDuckGo; none for ``off``, or ``tavily`` without a key
    (said in the log)."""
    from ..tools import DuckDuckGoSearch, TavilySearch, web_search

    found = doc.get("search")
    search: dict[str, Any] = found if isinstance(found, dict) else {}
    backend = search.get("backend") or "auto"
    key = search.get("tavily_api_key") or None
    if backend == "auto":
        backend = "tavily" if key else "ddg"
    if backend == "tavily":
        if not key:
            log.warning("web_search is off: the tavily backend has no key (set it in Settings)")
            return []
        return [web_search(TavilySearch(api_key=key))]
    if backend == "ddg":
        return [web_search(DuckDuckGoSearch())]
    return []


def read_settings() -> dict[str, Any]:
    """The ``config.json`` found (project, then user scope), or ``{}``."""
    import json

    from .model_config import settings_path

    path = settings_path()
    try:
        doc = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}  # the model's reading of it says what is wrong
    return doc if isinstance(doc, dict) else {}
