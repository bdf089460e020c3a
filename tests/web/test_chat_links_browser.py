"""Links to a chat, on the page in Debian's Chromium: 0.9.119's page named the open chat in
its address as ``?session=<id>``, so bookmarks and shared links of that form must open the
chat here too; and an address changed in an open tab (``#chat=<id>`` typed or pasted, a link
followed) opens the chat it names, as a fresh page would."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from .test_browser import Server, browser
from .test_chat_ids import write_chats

__all__ = ["browser"]  # the fixture, used by name


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    db = tmp_path / "chats.db"
    write_chats(db, ["alpha", "team/beta"])
    with Server(db) as server:
        yield server


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert errors == []


def _shows(page: Any, chat_id: str) -> None:
    page.locator("[data-testid=user-message]", has_text=f"hi from {chat_id}").wait_for()
    assert page.locator("[data-testid=user-message]").count() == 1


def test_a_0_9_119_session_link_opens_its_chat(served: Server, page: Any) -> None:
    page.goto(f"{served.url}?session={quote('team/beta', safe='')}")
    page.wait_for_selector("body[data-ready=true]")
    _shows(page, "team/beta")
    # the address names the chat the page's own way, once
    assert page.evaluate("location.search") == ""
    assert page.evaluate("decodeURIComponent(location.hash)") == "#chat=team/beta"


def test_a_chat_address_changed_in_an_open_tab_opens_that_chat(served: Server, page: Any) -> None:
    page.goto(f"{served.url}#chat=alpha")
    page.wait_for_selector("body[data-ready=true]")
    _shows(page, "alpha")
    page.goto(f"{served.url}#chat={quote('team/beta', safe='')}")  # the same document
    _shows(page, "team/beta")
    assert "hi from team/beta" in page.inner_text("#chat-title")
    page.go_back()
    _shows(page, "alpha")
