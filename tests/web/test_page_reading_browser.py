"""How the chat page reads in Chromium (issue 31), where its earlier tests left a feature of
0.9.119's page unchecked: lovia's own tools summed up on their cards, the documented design
tokens restyling the page from the ``lovia web init-ui`` starters, a Markdown table's column
alignment and inline code, folded cards inside an open activity, and the composer's hint,
as short as 0.9.119's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import tool
from lovia.testing import call, text
from lovia.web import ChatUI

from .test_browser import Server
from .test_page_browser import Pages, _scripted, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "a,b"


@tool
def shell(command: str) -> str:
    """Run a command."""
    return "total 0"


@tool
def web_search(query: str) -> str:
    """Search the web."""
    return "no hits"


@tool
def now() -> str:
    """The time."""
    return "12:00"


@tool
def grep_files(regex: str) -> str:
    """A look-alike of the workspace tool, with an argument of its own."""
    return "none"


TOOLS = [read_file, shell, web_search, now, grep_files]


def _tools_agent() -> Any:
    return _scripted(
        call("read_file", {"path": "notes/<b>a</b>.md"}, call_id="c1"),
        call("shell", {"command": "ls   -la\n"}, call_id="c2"),
        call("web_search", {"query": "otters"}, call_id="c3"),
        call("now", {}, call_id="c4"),
        call("grep_files", {"regex": "x"}, call_id="c5"),
        text("Done."),
        tools=TOOLS,
    )


def _lines(page: Any) -> list[str]:
    # text_content: the cards sit folded under their activity line
    return [str(x) for x in page.locator("[data-part=tool] .tool-name").all_text_contents()]


def test_lovias_own_tools_read_as_what_they_did(pages: Pages, tmp_path: Path) -> None:
    with Server(tmp_path / "t.db", agents=_tools_agent()) as running:
        page = pages.open(running.url, locale="en-US")
        send(page, "go")
        wait_idle(page)
        assert _lines(page) == [
            "Read file notes/<b>a</b>.md",
            "$ ls -la",
            "Web search “otters”",
            "Check the time",
            "grep_files",  # its arguments are not the workspace tool's: name(args) stays
        ]
        assert page.locator("[data-part=tool] .tool-name b").count() == 0
        first = page.locator("[data-part=tool][data-tool=read_file] .tool-name")
        assert first.get_attribute("title") == 'read_file({"path": "notes/<b>a</b>.md"})'
        page.click("#lang-toggle")
        page.wait_for_selector("[data-part=tool] .tool-name >> text=读取文件", state="attached")
        assert _lines(page)[0] == "读取文件 notes/<b>a</b>.md"
        assert _lines(page)[2:4] == ["搜索网页 “otters”", "查看时间"]
        page.click("#lang-toggle")
        page.reload()  # read back from the stored chat
        page.wait_for_selector("body[data-ready=true]")
        page.wait_for_selector("[data-part=tool] .tool-name >> text=$ ls -la", state="attached")
        assert _lines(page)[0] == "Read file notes/<b>a</b>.md"


VIEW = """
window.lovia.registerToolView("web_search", { summary: (t) => `Looked for ${t.args.query}` });
window.lovia.registerToolView("*", { summary: (t) => (t.name === "now" ? "Clock" : null) });
"""


def test_an_extensions_tool_view_wins_over_the_built_in_line(pages: Pages, tmp_path: Path) -> None:
    assets = tmp_path / "ui"
    assets.mkdir()
    (assets / "views.js").write_text(VIEW)
    ui = ChatUI(assets=assets, scripts=["views.js"])
    with Server(tmp_path / "v.db", agents=_tools_agent(), ui=ui) as running:
        page = pages.open(running.url, locale="en-US")
        send(page, "go")
        wait_idle(page)
        # the tool's own view, then the "*" view, then lovia's line, then name(args)
        lines = _lines(page)
        assert lines[2:4] == ["Looked for otters", "Clock"]
        assert lines[:2] == ["Read file notes/<b>a</b>.md", "$ ls -la"]


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


TABLE = (
    "Cities:\n\n| city | people | note |\n| :--- | ---: | :-: |\n"
    "| Oslo | 709,000 | x |\n| Bern | 134,000 | y |\n\nRun `ls -la` first."
)


def test_a_tables_alignment_inline_code_and_folded_cards_read_as_written(
    pages: Pages, tmp_path: Path
) -> None:
    agent = _scripted(
        call("now", {}, call_id="n1"),
        call("now", {}, call_id="n2"),
        text(TABLE),
        tools=[now],
    )
    with Server(tmp_path / "m.db", agents=agent) as running:
        page = pages.open(running.url)
        send(page, "cities")
        wait_idle(page)
        cells = page.locator("[data-testid=answer] tbody tr").first.locator("td")
        aligns = [c.evaluate("(n) => getComputedStyle(n).textAlign") for c in cells.all()]
        assert aligns == ["left", "right", "center"]
        code = "[data-testid=answer] p > code"
        assert _style(page, code, "background-color") != _style(page, "body", "background-color")
        assert _style(page, code, "border-top-style") == "solid"
        # an open activity shows its cards folded: their marker says so
        page.click("[data-testid=activity] > summary")
        marker = "(n) => getComputedStyle(n.querySelector(':scope > summary'), '::before').content"
        assert page.locator("[data-testid=activity]").evaluate(marker) == '"▾"'
        card = page.locator("[data-testid=tool-call]").first
        assert card.get_attribute("open") is None
        assert card.evaluate(marker) == '"▸"'
        # opened, its arguments and result stand apart from the card they sit on
        card.locator("summary").click()
        args = "[data-testid=tool-call] .tool-args"
        assert _style(page, args, "background-color") != _style(
            page, "[data-testid=tool-call]", "background-color"
        )


def test_the_composers_hint_is_short_and_send_names_its_key(pages: Pages, tmp_path: Path) -> None:
    with Server(tmp_path / "c.db") as running:
        page = pages.open(running.url, locale="en-US")
        assert page.get_attribute("#input", "placeholder") == "Send a message…"
        assert "Enter" in (page.get_attribute("#send", "title") or "")
        page.click("#lang-toggle")
        assert page.get_attribute("#input", "placeholder") == "输入消息…"
        assert "Enter" in (page.get_attribute("#send", "title") or "")
        assert page.get_attribute("#send", "title") != "Send (Enter); Shift+Enter starts a new line"
