"""``show_html``: a small self-contained page (a calculator, a simulation) run in a sandbox
inside the chat, with no network and no access to the chat."""

from __future__ import annotations

from typing import Annotated

from ..errors import ToolError
from ..tools import tool
from .components import check_json_size, ui_result

__all__ = ["MAX_HTML_BYTES", "show_html"]

MAX_HTML_BYTES = 128 * 1024


@tool
def show_html(
    html: Annotated[str, "A whole HTML page: inline CSS and JavaScript only."],
    title: Annotated[str | None, "A short heading."] = None,
) -> str:
    """Show the user an interactive page, for what a chart or a table cannot do. It runs
    in a sandbox: no network (inline everything), no storage, no forms. Never ask for
    passwords or personal data in it."""
    if not html.strip():
        raise ToolError("html is empty", hint="write the whole page, with its style and script")
    check_json_size(
        {"html": html, "title": title},
        what="page",
        limit=MAX_HTML_BYTES,
        hint="make the page smaller: less inline data, shorter code",
    )
    return ui_result("html", from_args=True)
