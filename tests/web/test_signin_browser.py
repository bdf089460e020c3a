"""Signing in again in Chromium (issue 31: "a token prompt after a 401"), as 0.9.119's page
does: any call answered 401 by the server's token check brings back the token prompt, also
long after the page started (the cookie went, or the server's token changed); a 401 from an
``auth=`` dependency of the app's own sends the browser to ``ChatUI(login_url=...)``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi import HTTPException, Request

from lovia.web import ChatUI

from .test_browser import Server
from .test_page_browser import Pages, browser, chat_id, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses

TOKEN = "s3cret-token"
LOGIN = re.compile(r"/login\?next=%2F$")


def test_a_page_that_loses_its_token_asks_for_it_again(pages: Pages, tmp_path: Path) -> None:
    with Server(tmp_path / "t.db", token=TOKEN) as running:
        page = pages.open(f"{running.url}?token={TOKEN}")
        send(page, "calculate 6 * 7")
        wait_idle(page)
        opened = chat_id(page)
        assert page.locator("#token-dialog").is_hidden()
        page.context.clear_cookies()  # as when the server's token changes
        send(page, "calculate 1 + 1")
        page.wait_for_selector("#token-dialog[open]")
        assert page.evaluate("document.body.dataset.needsToken") == "true"
        page.fill("#token-input", TOKEN)
        with page.expect_navigation():
            page.click("#token-save")
        page.wait_for_selector("body[data-ready=true]")
        assert chat_id(page) == opened  # back in the same chat
        assert "token" not in page.url
        assert page.locator("#token-dialog").is_hidden()
        answers = page.locator("[data-testid=answer]").count()
        send(page, "calculate 2 + 2")
        page.wait_for_function(
            f"document.querySelectorAll('[data-testid=answer]').length > {answers}"
        )
        wait_idle(page)
        assert "4" in page.locator("[data-testid=answer]").last.inner_text()
        pages.close()  # before the server stops: the page would still be reading from it


def test_a_401_from_the_apps_own_auth_goes_to_its_login_page(pages: Pages, tmp_path: Path) -> None:
    async def signed_in(request: Request) -> None:
        if request.cookies.get("session") != "ok":
            raise HTTPException(status_code=401)

    ui = ChatUI(login_url="/login?next={next}")
    with Server(tmp_path / "a.db", auth=signed_in, ui=ui) as running:
        page = pages.open(running.url, ready=False)
        page.wait_for_url(LOGIN)  # no token prompt: the app signs its users in
        cookie: Any = {"name": "session", "value": "ok", "url": running.url}
        page.context.add_cookies([cookie])
        page.goto(running.url)
        page.wait_for_selector("body[data-ready=true]")
        page.context.clear_cookies()  # signed out later, by the app
        send(page, "calculate 6 * 7")
        page.wait_for_url(LOGIN)
        pages.close()
