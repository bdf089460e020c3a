"""Follow-up suggestions kept under a chat's answer, in Chromium, as on 0.9.119's page: the
chips made after an answer show again when the chat is opened again (after another chat, after
a reload), without asking the server for new ones; once the answer changes they are gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .test_browser import Server
from .test_page_browser import Pages, browser, chat_id, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses


def test_suggestions_stay_under_the_answer_they_follow(pages: Pages, tmp_path: Path) -> None:
    asked: list[int] = []

    async def suggest(request: Any) -> list[str]:
        asked.append(len(request.messages))
        return [f"Next {len(asked)}?", "<b>bold</b> question"]

    with Server(tmp_path / "f.db", followups=suggest) as running:
        page = pages.open(running.url)
        send(page, "calculate 6 * 7")
        wait_idle(page)
        chips = page.locator("[data-testid=followup]")
        chips.first.wait_for()
        assert chips.all_inner_texts() == ["Next 1?", "<b>bold</b> question"]
        first = chat_id(page)

        page.click("#new-chat")  # another chat, then back
        assert chips.count() == 0
        page.locator("[data-testid=chat-item]").first.locator(".chat-open").click()
        page.wait_for_selector("[data-testid=regenerate]")
        assert chat_id(page) == first
        assert chips.all_inner_texts() == ["Next 1?", "<b>bold</b> question"]

        page.reload()  # after a reload too, as text
        page.wait_for_selector("body[data-ready=true]")
        page.wait_for_selector("[data-testid=regenerate]")
        assert chips.all_inner_texts() == ["Next 1?", "<b>bold</b> question"]
        assert page.locator("[data-part=followups] b").count() == 0
        assert len(asked) == 1  # shown again, not made again
        chips.first.click()
        assert page.input_value("#input") == "Next 1?"

        send(page, "calculate 1 + 1")  # a new answer: new suggestions only
        wait_idle(page)
        page.wait_for_function(
            "document.querySelector('[data-testid=followup]')?.innerText === 'Next 2?'"
        )
        assert page.locator("[data-part=followups]").count() == 1
        pages.close()
