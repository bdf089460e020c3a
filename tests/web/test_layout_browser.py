"""The chat page's own layout in Chromium (issue 31), as 0.9.119's page lays it out: the
sidebar runs the page's full height with the page's name on top, the title bar heads the chat
column and names the open chat, an answer's actions show while the pointer is on it (always
on a touch screen), every region 0.9.119 documents a ``data-part`` for carries it, and the
top bar's Tasks menu lists the chat's background subagent tasks and opens them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import Agent
from lovia.plugins import Subagents
from lovia.testing import ScriptedProvider, call, text
from lovia.workspace import Workspace

from .test_browser import Server
from .test_page_browser import Pages, browser, chat_id, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses

# 0.9.119's web-server.md, "Styling": the regions a stylesheet may target
DOCUMENTED = (
    "sidebar", "sidebar-header", "agent-switcher", "sidebar-nav", "new-chat", "memory",
    "schedules", "settings", "sessions-label", "sessions-search", "sessions",
    "topbar", "chat-title", "topbar-actions", "tasks", "export", "files-toggle",
    "view", "transcript", "welcome", "todo-panel", "composer", "attach", "context-ring",
    "language",
)  # fmt: skip


@pytest.fixture
def demo(tmp_path: Path, pages: Pages) -> Iterator[Server]:
    with Server(tmp_path / "lovia.db") as running:
        yield running
        pages.close()


def _opacity(locator: Any, settled: str) -> str:
    """The element's opacity once it is ``settled`` (the actions fade in and out); the
    wait fails the test at its timeout when it never gets there."""
    node = locator.element_handle()
    locator.page.wait_for_function(
        "([n, want]) => getComputedStyle(n).opacity === want", arg=[node, settled]
    )
    return str(locator.evaluate("(n) => getComputedStyle(n).opacity"))


def test_the_title_bar_heads_the_chat_column_and_names_the_chat(
    pages: Pages, demo: Server, tmp_path: Path
) -> None:
    page = pages.open(demo.url, locale="en-US")
    sidebar = page.locator("[data-part=sidebar]").bounding_box()
    topbar = page.locator("[data-part=topbar]").bounding_box()
    assert sidebar and topbar
    # the sidebar runs from the top; the title bar starts where it ends, over the chat only
    assert sidebar["y"] == 0 and sidebar["height"] == 800
    assert topbar["x"] >= sidebar["x"] + sidebar["width"]
    assert page.locator("[data-part=sidebar] [data-part=sidebar-header] #page-title").count() == 1
    title = page.locator("[data-part=topbar] [data-part=chat-title]")
    assert title.inner_text() == "New chat"
    send(page, "calculate 6 * 7")
    wait_idle(page)
    chat = chat_id(page)
    page.screenshot(path=str(tmp_path / "title-bar.png"))
    renamed = httpx.patch(f"{demo.url}api/sessions/{chat}", json={"title": "Otters <b>x</b>"})
    assert renamed.status_code == 200, renamed.text
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert title.inner_text() == "Otters <b>x</b>"  # the title is text, never markup
    page.click("#lang-toggle")
    assert title.inner_text() == "Otters <b>x</b>"  # a chat's own title is not translated
    page.click("#new-chat")
    page.wait_for_function("document.getElementById('chat-title').textContent === '新对话'")


def test_an_answers_actions_show_while_the_pointer_is_on_it(
    pages: Pages, demo: Server, tmp_path: Path, browser: Any
) -> None:
    page = pages.open(demo.url)
    send(page, "calculate 6 * 7")
    wait_idle(page)
    answer = page.locator("[data-testid=answer]").last
    actions = answer.locator("[data-part=message-actions]")
    assert actions.locator("[data-action=copy]").count() == 1
    # drawn as icons, they keep their names (what a screen reader says, the tooltip)
    assert answer.get_by_role("button", name="Copy").count() == 1
    assert answer.get_by_role("button", name="Branch in new chat").count() == 1
    assert actions.locator("[data-action=copy]").get_attribute("title") == "Copy"
    page.mouse.move(5, 5)  # on the sidebar, away from the answer
    assert _opacity(actions, "0") == "0"
    answer.hover()
    assert _opacity(actions, "1") == "1"
    page.screenshot(path=str(tmp_path / "hover.png"))
    # keyboard users reach them too: focus inside the answer shows them
    page.mouse.move(5, 5)
    assert _opacity(actions, "0") == "0"
    actions.locator("[data-action=copy]").focus()
    assert _opacity(actions, "1") == "1"
    # a touch screen has no hover: the actions stay shown
    touch = pages.open(demo.url + f"#chat={chat_id(page)}", has_touch=True, is_mobile=True)
    touch.wait_for_selector("[data-testid=answer] [data-part=message-actions] [data-action=copy]")
    shown = touch.locator("[data-testid=answer] [data-part=message-actions]").last
    assert _opacity(shown, "1") == "1"


def test_every_documented_data_part_is_on_the_page(pages: Pages, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.md").write_text("# Notes\n")
    model = ScriptedProvider(
        [call("read_file", {"path": "notes.md"}, call_id="r1"), text("It has a title.")]
    )
    ws = Workspace.local(str(root), mode="readonly")
    agents = {
        "bot": Agent(name="bot", model=model, workspace=ws),
        "plain": Agent(name="plain", model=ScriptedProvider([text("hi")])),
    }
    with Server(tmp_path / "lovia.db", agents=agents) as running:
        page = pages.open(running.url)
        missing = [p for p in DOCUMENTED if page.locator(f'[data-part="{p}"]').count() != 1]
        assert missing == []
        # the ones a chat draws: each turn by role, the tool card by tool, the actions
        send(page, "what is in notes.md?")
        wait_idle(page)
        assert page.locator('[data-part=turn][data-role="user"]').count() == 1
        assert page.locator('[data-part=turn][data-role="assistant"]').count() == 1
        card = page.locator('[data-part=tool][data-tool="read_file"]')
        assert card.count() == 1 and card.get_attribute("data-status") == "done"
        assert page.locator("[data-part=message-actions] [data-action=copy]").count() == 1
        # Files sits in the top bar, and opens the Files panel
        toggle = page.locator("[data-part=topbar-actions] [data-part=files-toggle]")
        toggle.click()
        page.wait_for_selector("[data-part=files-panel]")
        page.screenshot(path=str(tmp_path / "parts.png"))
        pages.close()


def test_the_tasks_menu_lists_the_chats_background_tasks(pages: Pages, tmp_path: Path) -> None:
    child = Agent(name="digger", model=ScriptedProvider([text("found it")]))
    parent = Agent(
        name="bot",
        model=ScriptedProvider(
            [
                call("spawn_subagent", {"prompt": "dig", "agent": "digger"}, call_id="c1"),
                call("wait_subagents", {}, call_id="c2"),
                text("parent done"),
            ]
        ),
        plugins=[Subagents(agents=[child])],
    )
    with Server(tmp_path / "lovia.db", agents=parent) as running:
        page = pages.open(running.url, locale="en-US")
        tasks = page.locator("[data-part=topbar-actions] [data-part=tasks]")
        assert tasks.is_hidden()  # a new chat has none
        send(page, "go")
        page.wait_for_selector("[data-testid=answer]:has-text('parent done')")
        tasks.wait_for()
        parent_id = chat_id(page)
        assert tasks.locator("#tasks-count").inner_text() == "1"
        tasks.locator("summary").click()
        task = tasks.locator("[data-testid=task]")
        assert task.count() == 1
        assert "done" in task.inner_text()
        page.screenshot(path=str(tmp_path / "tasks.png"))
        (kid,) = httpx.get(f"{running.url}api/sessions", params={"parent": parent_id}).json()
        task.click()
        page.wait_for_function(f"location.hash.includes({kid['id']!r})")
        page.wait_for_selector("[data-testid=answer]:has-text('found it')")
        assert tasks.is_hidden()  # the task's own chat has no tasks
        pages.close()
