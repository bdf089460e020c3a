"""Tools: the ``Tool`` type, the ``@tool`` decorator and the built-in tools.

Defining and running tools lives in :mod:`lovia.tools.base`; each built-in tool lives in its
own module and is re-exported here.
"""

from __future__ import annotations

from .base import (
    ApprovalPredicate,
    Tool,
    ToolInvoker,
    ToolPolicy,
    ToolResultRenderer,
    result_to_text,
    run_tool,
    tool,
)
from .base import OnResume as OnResume
from .base import make_tool as make_tool
from .base import strip_titles as strip_titles
from .base import truncate_output as truncate_output
from .fence import FENCE_NOTE, fence
from .human import HumanChannel, HumanQuestion, QuestionOption, ask_human
from .page import HttpReader, Page, PageImage, PageReader, html_to_markdown, web_fetch
from .recall import recall_tool_result
from .search import (
    DuckDuckGoSearch,
    SearchResult,
    TavilySearch,
    WebSearch,
    duckduckgo_search,
    tavily_search,
    web_search,
)
from .time import current_date, now

__all__ = [
    "FENCE_NOTE",
    "ApprovalPredicate",
    "DuckDuckGoSearch",
    "HttpReader",
    "HumanChannel",
    "HumanQuestion",
    "Page",
    "PageImage",
    "PageReader",
    "QuestionOption",
    "SearchResult",
    "TavilySearch",
    "Tool",
    "ToolInvoker",
    "ToolPolicy",
    "ToolResultRenderer",
    "WebSearch",
    "ask_human",
    "current_date",
    "duckduckgo_search",
    "fence",
    "html_to_markdown",
    "now",
    "recall_tool_result",
    "result_to_text",
    "run_tool",
    "tavily_search",
    "tool",
    "web_fetch",
    "web_search",
]
