"""Approving a tool call "always" in a chat, in Chromium, as 0.9.119's page offers it: the
box under a waiting call allows that tool for the rest of the chat in this tab, so its later
calls there run without asking; another chat, or the tab after a reload, asks again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import tool

from .test_browser import Server
from .test_page_browser import Pages, browser, pages, send

__all__ = ["browser", "pages"]  # the fixtures this module uses

DELETED: list[str] = []


@tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file.

    Args:
        path: the file.
    """
    DELETED.append(path)
    return f"deleted {path}"


@pytest.fixture
def server(tmp_path: Path, pages: Pages) -> Iterator[Server]:
    DELETED.clear()
    script = [
        call("delete_file", {"path": "a.txt"}, call_id="c1"),
        text("Deleted a."),
        call("delete_file", {"path": "b.txt"}, call_id="c2"),
        text("Deleted b."),
        call("delete_file", {"path": "c.txt"}, call_id="c3"),
        # Stop rejects c3 without asking the model again
        call("delete_file", {"path": "d.txt"}, call_id="c4"),
        text("Deleted d."),
    ]
    agent = Agent("assistant", model=ScriptedProvider(script), tools=[delete_file])
    with Server(tmp_path / "lovia.db", agents=agent) as running:
        yield running
        pages.close()


def _answered(page: Any, text: str) -> None:
    page.wait_for_function(f"document.querySelector('#messages').innerText.includes({text!r})")
    page.wait_for_selector("#send:not([hidden])")


def test_always_allow_runs_the_tools_later_calls_in_that_chat_only(
    pages: Pages, server: Server
) -> None:
    page = pages.open(server.url)
    send(page, "delete a")
    card = page.locator("[data-testid=approval]")
    card.wait_for()
    assert "Always allow delete_file in this chat" in card.inner_text()
    card.locator("[data-testid=approval-always]").check()
    card.locator("[data-testid=approve]").click()
    _answered(page, "Deleted a.")

    send(page, "delete b")  # the same chat: no card, the call runs
    _answered(page, "Deleted b.")
    assert DELETED == ["a.txt", "b.txt"]

    first = page.evaluate("location.href")
    page.click("#new-chat")  # another chat asks again
    send(page, "delete c")
    page.locator("[data-testid=approval]").wait_for()
    assert DELETED == ["a.txt", "b.txt"]
    page.locator("[data-testid=stop-pending]").click()
    page.wait_for_selector("[data-testid=approval]", state="detached")

    page.goto(first)  # the first chat, after a reload: asked again
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    send(page, "delete d")
    page.locator("[data-testid=approval]").wait_for()
    assert DELETED == ["a.txt", "b.txt"]
