"""The page's keyboard shortcuts in Chromium, those 0.9.119's page has: Esc stops the answer
being written (unless something open on top takes it), Ctrl/Cmd+K goes to the chat search,
Ctrl/Cmd+Shift+O starts a new chat, and ? lists the shortcuts (a ? typed in the message box is
text)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_browser import Server
from .test_page_browser import Pages, browser, chat_id, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses


@pytest.fixture
def server(tmp_path: Path, pages: Pages) -> Iterator[Server]:
    with Server(tmp_path / "lovia.db") as running:
        yield running
        pages.close()


def test_escape_closes_what_is_open_on_top_then_stops_the_answer(
    pages: Pages, server: Server
) -> None:
    page = pages.open(server.url)
    send(page, "wait 5")
    page.wait_for_selector("[data-testid=tool-call] >> text=running…")
    page.click("#settings-btn")
    page.wait_for_selector("dialog[open]")
    page.keyboard.press("Escape")  # the dialog's
    page.wait_for_selector("dialog[open]", state="detached")
    assert page.locator("#stop").is_visible()  # the run goes on
    page.keyboard.press("Escape")  # the run's
    page.wait_for_selector("#send:not([hidden])", timeout=4_000)  # well before the 5 s
    assert page.locator("[data-testid=ended]").inner_text() == "(stopped)"


def test_ctrl_k_searches_and_ctrl_shift_o_starts_a_new_chat(pages: Pages, server: Server) -> None:
    page = pages.open(server.url)
    send(page, "calculate 2 + 2")
    wait_idle(page)
    first = chat_id(page)
    page.keyboard.press("Control+k")
    assert page.evaluate("document.activeElement.id") == "chat-search"
    page.keyboard.press("Control+Shift+O")
    page.wait_for_function(f"!location.hash.includes({first!r})")
    assert page.locator("[data-part=welcome]").is_visible()
    assert page.locator("[data-testid=user-message]").count() == 0


def test_question_mark_lists_the_shortcuts_outside_the_message_box(
    pages: Pages, server: Server, tmp_path: Path
) -> None:
    page = pages.open(server.url)
    page.fill("#input", "why")
    page.press("#input", "?")
    assert page.input_value("#input") == "why?"
    assert page.locator("[data-testid=shortcuts]").count() == 0
    page.locator("#chat-title").click()  # out of the box
    page.keyboard.press("?")
    listed = page.locator("[data-testid=shortcuts]")
    listed.wait_for()
    keys = listed.locator("kbd").all_inner_texts()
    assert {"Esc", "Ctrl + K", "Ctrl + Shift + O", "?"} <= set(keys)
    page.screenshot(path=str(tmp_path / "shortcuts.png"))
    page.keyboard.press("Escape")
    listed.wait_for(state="detached")
