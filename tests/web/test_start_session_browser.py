"""``start_session`` on the chat page, in Chromium against a real server: the call's card
names the chat it opened and opens it; the new chat holds its own run's answer."""

from __future__ import annotations

from pathlib import Path

import httpx

from lovia import Agent
from lovia.web import ChatStore
from lovia.web.scheduling import Scheduling

from .apps import Stateless
from .test_browser import Server
from .test_page_browser import Pages, browser, chat_id, pages, send, wait_idle
from .test_start_session import _brain

__all__ = ["browser", "pages"]  # the fixtures this module uses


def test_the_card_of_a_started_chat_opens_it(pages: Pages, tmp_path: Path) -> None:
    store = ChatStore.sqlite(tmp_path / "lovia.db")
    agent = Agent(name="bot", model=Stateless(_brain), plugins=[Scheduling(store)])
    with Server(tmp_path / "lovia.db", agent, store=store) as server:
        page = pages.open(server.url)
        send(page, "open a chat, titled")
        wait_idle(page)
        source = chat_id(page)
        card = page.locator("[data-testid=started-chat]")
        card.wait_for()
        assert card.inner_text().endswith("Counting")
        page.screenshot(path=str(tmp_path / "card.png"))
        card.click()
        page.wait_for_function(f"!location.hash.includes({source!r})")
        page.wait_for_selector("[data-testid=answer] >> text=answer to count to 3")
        users = page.locator("[data-testid=user-message] .user-text").all_inner_texts()
        assert [u.strip() for u in users] == ["count to 3"]
        page.screenshot(path=str(tmp_path / "opened.png"))
        spawned = chat_id(page)
        # the new chat links back to the one that started it
        origin = page.locator("[data-testid=origin]")
        assert origin.inner_text() == "Started from open a chat, titled"
        origin.click()
        page.wait_for_function(f"location.hash.includes({source!r})")
        page.locator("[data-testid=started-chat]").wait_for()
        assert page.locator("[data-testid=origin]").is_hidden()  # a chat of its own
        # its source deleted, the link names that and leads nowhere
        assert httpx.delete(f"{server.url}api/sessions/{source}").status_code == 200
        page.goto(f"{server.url}#chat={spawned}")
        page.reload()
        page.wait_for_selector("[data-testid=origin]:has-text('Starting chat deleted')")
        assert page.locator("[data-testid=origin]").is_disabled()
        pages.close()
