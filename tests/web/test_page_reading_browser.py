"""How the chat page reads in Chromium (issue 31), where its earlier tests left a feature of
0.9.119's page unchecked: the documented design tokens restyling the page from the
``lovia web init-ui`` starters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia.web import ChatUI

from .test_browser import Server
from .test_page_browser import Pages, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses


TOKENS = """
[data-theme="light"] {
  --surface: rgb(250, 240, 230); --border: rgb(200, 10, 10); --accent: rgb(109, 40, 217);
  --user-surface: rgb(230, 250, 230); --user-border: rgb(10, 120, 10);
}
[data-theme="dark"] { --surface: rgb(20, 30, 60); --accent: rgb(167, 139, 250); }
:root { --sans: Georgia, serif; --sidebar-w: 300px; }
"""


def _style(page: Any, selector: str, prop: str) -> str:
    return str(
        page.evaluate(
            "([s, p]) => getComputedStyle(document.querySelector(s)).getPropertyValue(p)",
            [selector, prop],
        )
    )


def test_the_init_ui_starters_run_and_the_documented_tokens_restyle_the_page(
    pages: Pages, tmp_path: Path
) -> None:
    from lovia.web.scaffold import init_ui

    folder = tmp_path / "ui"
    init_ui(folder)  # index.html, theme.css and extension.js, every line commented out
    theme = folder / "theme.css"
    theme.write_text(theme.read_text() + TOKENS)
    ui = ChatUI(assets=folder, styles=["theme.css"], scripts=["extension.js"])
    with Server(tmp_path / "k.db", ui=ui) as running:
        page = pages.open(running.url, color_scheme="light", bypass_csp=False)
        refused: list[str] = []
        page.on("console", lambda m: refused.append(m.text) if "Content Security" in m.text else 0)
        page.reload()  # heard from the first request on
        page.wait_for_selector("body[data-ready=true]")
        send(page, "calculate 6 * 7")
        wait_idle(page)
        sidebar = "[data-part=sidebar]"
        assert _style(page, sidebar, "background-color") == "rgb(250, 240, 230)"
        assert _style(page, sidebar, "border-right-color") == "rgb(200, 10, 10)"
        assert _style(page, sidebar, "width") == "300px"
        assert _style(page, "#send", "background-color") == "rgb(109, 40, 217)"
        bubble = "[data-testid=user-message] > .user-text"
        assert _style(page, bubble, "background-color") == "rgb(230, 250, 230)"
        assert _style(page, bubble, "border-top-color") == "rgb(10, 120, 10)"
        assert _style(page, "body", "font-family").startswith("Georgia")
        page.click("#theme-toggle")  # each theme has its own values
        assert _style(page, sidebar, "background-color") == "rgb(20, 30, 60)"
        assert _style(page, "#send", "background-color") == "rgb(167, 139, 250)"
        assert refused == []
