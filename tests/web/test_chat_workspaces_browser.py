"""A chat's background processes on the page, in Chromium against a real server: the Files
panel lists the process a run started, with its command and state, and Kill stops it (the
process really ends: its log stops growing)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lovia import Agent
from lovia.testing import call, text
from lovia.web import ChatStore
from lovia.workspace import Workspace

from .apps import Stateless
from .test_browser import Server
from .test_chat_workspaces import TICK
from .test_page_browser import Pages, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses


def _start_then_answer(messages: list[Any]) -> Any:
    if any(getattr(m, "role", None) == "tool" for m in messages):
        return text("started")
    return call("shell", {"command": TICK, "background": True}, call_id="c1")


def _grows(log: Path) -> bool:
    before = log.stat().st_size if log.exists() else 0
    time.sleep(0.4)
    return (log.stat().st_size if log.exists() else 0) > before


def test_the_files_panel_lists_the_chats_processes_and_kills_one(
    pages: Pages, tmp_path: Path
) -> None:
    root = tmp_path / "work"
    root.mkdir()
    agent = Agent(
        name="bot",
        model=Stateless(_start_then_answer),
        workspace=Workspace.local(str(root), mode="trusted"),
    )
    db = tmp_path / "lovia.db"
    with Server(db, agent, store=ChatStore.sqlite(db)) as server:
        page = pages.open(server.url)
        send(page, "start a ticker")
        wait_idle(page)
        page.wait_for_selector("#files-btn:not([hidden])")
        page.click("#files-btn")
        row = page.locator("[data-testid=files-processes] [data-testid=process]")
        row.wait_for()
        assert row.get_attribute("data-status") == "running"
        assert TICK in row.inner_text()
        assert _grows(root / "tick.log")
        page.screenshot(path=str(tmp_path / "processes.png"))
        row.locator("[data-testid=process-kill]").click()
        page.wait_for_selector("[data-testid=process][data-status=killed]")
        assert not _grows(root / "tick.log")
        pages.close()
