"""Issue 33 on the chat page, in Chromium against a real server: "Re-run from here" on a user
message forks the chat before it into a new chat (the store's fork), opens it and sends the
message again there; the original chat is untouched."""

from __future__ import annotations

from pathlib import Path

from .test_browser import Server
from .test_page_browser import Pages, browser, chat_id, pages, send, server, wait_idle

__all__ = ["browser", "pages", "server"]  # the fixtures this module uses


def _users(page: object) -> list[str]:
    loc = page.locator("[data-testid=user-message] .user-text")  # type: ignore[attr-defined]
    return [t.strip() for t in loc.all_inner_texts()]


def test_rerun_from_here_forks_the_chat_and_sends_the_message_again(
    pages: Pages, server: Server, tmp_path: Path
) -> None:
    page = pages.open(server.url)
    send(page, "calculate 6 * 7")
    wait_idle(page)
    send(page, "what time is it?")
    wait_idle(page)
    original = chat_id(page)
    before = [(s.run_id, len(s.entries)) for s in server.segments(original)]
    assert len(before) == 2
    reruns = page.locator("[data-testid=user-message] [data-testid=action-rerun]")
    assert reruns.count() == 2  # one on each user message of a settled chat
    reruns.nth(1).click()
    page.wait_for_function(f"!location.hash.includes({original!r})")
    # the fork opens with the first exchange (settled for a moment), then the message goes
    page.wait_for_function(
        "document.querySelectorAll('[data-testid=user-message]').length === 2"
        " && document.querySelectorAll('[data-testid=answer]').length === 2"
    )
    wait_idle(page)
    fork = chat_id(page)
    assert fork != original
    # the fork holds the first exchange and the re-sent message with a new answer
    assert _users(page) == ["calculate 6 * 7", "what time is it?"]
    answers = page.locator("[data-testid=answer]")
    assert answers.count() == 2 and "42" in answers.nth(0).inner_text()
    page.screenshot(path=str(tmp_path / "rerun.png"))
    forked = server.segments(fork)
    assert forked[0].run_id == before[0][0] and len(forked) == 2
    assert forked[1].run_id != before[1][0]  # the message ran again, as a run of its own
    # the original is as it was, and both chats are listed
    assert [(s.run_id, len(s.entries)) for s in server.segments(original)] == before
    page.wait_for_function("document.querySelectorAll('[data-testid=chat-item]').length === 2")
    # re-running from the first message starts a chat with nothing before it
    page.locator("[data-testid=user-message] [data-testid=action-rerun]").first.click()
    page.wait_for_function(f"!location.hash.includes({fork!r})")
    page.wait_for_function(
        "document.querySelectorAll('[data-testid=user-message]').length === 1"
        " && document.querySelectorAll('[data-testid=answer]').length === 1"
    )
    wait_idle(page)
    assert _users(page) == ["calculate 6 * 7"]
    page.wait_for_function("document.querySelectorAll('[data-testid=chat-item]').length === 3")


def test_rerun_is_offered_only_on_a_settled_chat(pages: Pages, server: Server) -> None:
    page = pages.open(server.url)
    send(page, "wait 5")  # the demo's slow tool: the run is live for a while
    page.wait_for_selector("#stop:not([hidden])")
    assert page.locator("[data-testid=action-rerun]").count() == 0
    page.click("#stop")
    wait_idle(page)
    assert page.locator("[data-testid=action-rerun]").count() == 1
