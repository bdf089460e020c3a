"""The page when its server goes away, in Chromium: ``lovia web --demo`` killed while an
answer runs. As on 0.9.119's page, the chat stays on screen (the message and what the answer
had so far) with an error that says the server cannot be reached, and a message sent while
it is down is not lost (it goes back to the message box)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

from ..web_server import serving
from .test_page_browser import Pages, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses

LOVIA = Path(sys.executable).with_name("lovia")


def test_a_killed_server_leaves_the_chat_on_screen_and_the_message_in_the_box(
    pages: Pages, tmp_path: Path
) -> None:
    command = [str(LOVIA), "web", "--demo", "--db", str(tmp_path / "lovia.db")]
    with serving(command, quiet=True) as (proc, base):
        page: Any = pages.open(f"{base}/")
        send(page, "wait 5")
        page.wait_for_selector("[data-testid=tool-call] >> text=running…")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        error = page.locator("[data-testid=error]")
        error.wait_for()
        assert "Can't reach the server" in error.inner_text()
        assert page.locator("[data-testid=user-message]").inner_text() == "wait 5"
        assert page.locator("[data-testid=tool-call]").count() == 1
        assert (
            "connection to the server was lost" in page.locator("[data-testid=answer]").inner_text()
        )
        page.wait_for_selector("#send:not([hidden])")

        send(page, "are you there?")  # the server is down
        page.wait_for_function("document.querySelectorAll('[data-testid=error]').length >= 1")
        page.wait_for_function("document.querySelector('#input').value === 'are you there?'")
        assert page.locator("[data-testid=user-message]").count() == 1  # not drawn as sent
        assert page.locator("[data-testid=tool-call]").count() == 1  # the chat stays
        page.screenshot(path=str(tmp_path / "server-gone.png"))
        pages.close()


def test_a_cut_connection_to_a_running_server_opens_the_chat_again(
    pages: Pages, tmp_path: Path
) -> None:
    """Only the connection failed (a proxy cut it, the network blinked) and the server still
    answers: the page opens the chat as the server has it, a message it never took goes back
    to the box, and no error says the server is gone."""
    command = [str(LOVIA), "web", "--demo", "--db", str(tmp_path / "lovia.db")]
    with serving(command, quiet=True) as (_proc, base):
        page: Any = pages.open(f"{base}/")
        send(page, "calculate 6 * 7")
        wait_idle(page)
        page.route("**/api/chat/stream", lambda route: route.abort())
        send(page, "and 7 * 8?")
        page.wait_for_function("document.querySelector('#input').value === 'and 7 * 8?'")
        error = page.locator("[data-testid=error]")
        error.wait_for()
        assert "Can't reach the server" not in error.inner_text()
        assert page.locator("[data-testid=user-message]").count() == 1  # as the server has it
        assert "42" in page.locator("[data-testid=answer]").inner_text()
        pages.close()
