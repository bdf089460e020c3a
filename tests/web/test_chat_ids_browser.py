"""Chats a program stored under any session id, on the page in Debian's Chromium.

``Runner.run`` writes chats under ids such as ``alice@example.com``, ``team/alice`` and
``Zoë 1`` first; the page lists them, opens them (from the list and from ``#chat=``),
continues, stops and deletes them, naming each in its URLs by its ``~`` form. An id made of
markup is shown as text and never runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from lovia.web.ids import chat_segment

from .test_browser import Server, browser
from .test_chat_ids import write_chats

__all__ = ["browser"]  # the fixture, used by name

HOSTILE = '<img src=x onerror="document.body.dataset.pwned=1">'
SPOOF = "alice\u202e\u200bmoc.elpmaxe@"
"""An id whose invisible characters would make it look like another one."""


@pytest.fixture
def opened(browser: Any, tmp_path: Path) -> Iterator[tuple[Any, Server, list[str]]]:
    db = tmp_path / "chats.db"
    ids = ["victim", "alice@example.com", "team/alice", "Zoë 1", "../chats/victim", HOSTILE]
    write_chats(db, [*ids, SPOOF])
    with Server(db) as server:
        # no bypass_csp here: the page runs under its own policy, as for a user
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors: list[str] = []
        urls: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.accept()))
        page.on("request", lambda r: urls.append(r.url))
        page.goto(server.url)
        page.wait_for_selector("body[data-ready=true]")
        yield page, server, urls
        context.close()
        assert [e for e in errors if not e.startswith("dialog: Delete")] == []


def _item(page: Any, chat_id: str) -> Any:
    return page.locator("[data-testid=chat-item]", has_text=f"hi from {chat_id}")


def _open(page: Any, chat_id: str) -> None:
    _item(page, chat_id).locator("button.chat-open").click()
    page.locator("[data-testid=user-message]", has_text=f"hi from {chat_id}").wait_for()
    page.wait_for_selector("body[data-ready=true]")


def _send_and_wait(page: Any, message: str) -> None:
    page.fill("#input", message)
    page.press("#input", "Enter")
    page.wait_for_selector("#stop:not([hidden])")
    page.wait_for_selector("#send:not([hidden])")
    page.wait_for_selector("[data-testid=regenerate]")


def _stored(server: Server, chat_id: str) -> list[Any]:
    return [e.content for s in server.segments(chat_id) for e in s.entries if e.type == "input"]


def _hash_id(page: Any) -> str:
    from urllib.parse import unquote

    return unquote(str(page.evaluate("location.hash")).split("chat=", 1)[1])


@pytest.mark.parametrize("chat_id", ["alice@example.com", "team/alice", "Zoë 1"])
def test_a_chat_stored_under_an_odd_id_opens_continues_stops_and_deletes(
    opened: tuple[Any, Server, list[str]], chat_id: str
) -> None:
    page, server, urls = opened
    _open(page, chat_id)
    assert _hash_id(page) == chat_id
    segment = chat_segment(chat_id)
    assert segment.startswith("~")
    assert any(u.endswith(f"/api/sessions/{segment}") for u in urls), urls

    _send_and_wait(page, "calculate 6 * 7")
    page.locator("[data-testid=answer]", has_text="42").wait_for()
    assert _stored(server, chat_id) == [f"hi from {chat_id}", "calculate 6 * 7"]

    page.fill("#input", "wait 20")
    page.press("#input", "Enter")
    page.wait_for_selector("[data-testid=tool-call] >> text=running…")
    page.click("#stop")
    page.wait_for_selector("#send:not([hidden])")
    page.wait_for_selector("[data-testid=ended]")
    assert _stored(server, chat_id)[-1] == "wait 20"
    stop = f"/api/chat/cancel?session_id={quote(chat_id, safe='')}"
    assert any(u.endswith(stop) for u in urls), urls

    # a reload opens the same chat from the address
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.locator("[data-testid=user-message]", has_text="wait 20").wait_for()
    assert _hash_id(page) == chat_id

    _item(page, chat_id).locator("[data-testid=delete-chat]").click()
    _item(page, chat_id).wait_for(state="detached")
    assert server.segments(chat_id) == []
    assert _stored(server, "victim") == ["hi from victim"]
    other = "alice@example.com" if chat_id != "alice@example.com" else "team/alice"
    assert _item(page, other).count() == 1  # the other chats are still listed


def test_an_id_that_names_another_chats_path_touches_only_itself(
    opened: tuple[Any, Server, list[str]],
) -> None:
    page, server, _ = opened
    _open(page, "../chats/victim")
    _send_and_wait(page, "hello")
    assert _stored(server, "../chats/victim") == ["hi from ../chats/victim", "hello"]
    _item(page, "../chats/victim").locator("[data-testid=delete-chat]").click()
    _item(page, "../chats/victim").wait_for(state="detached")
    assert server.segments("../chats/victim") == []
    assert _stored(server, "victim") == ["hi from victim"]
    # an address naming the traversal opens that chat's id (now gone), never the victim
    page.goto(server.url + "#chat=" + quote("../chats/victim", safe=""))
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.locator("[data-testid=user-message]", has_text="hi from victim").count() == 0


def test_an_id_made_of_markup_is_text_on_the_page(opened: tuple[Any, Server, list[str]]) -> None:
    page, server, _ = opened
    item = _item(page, HOSTILE)
    assert item.locator("button.chat-open").get_attribute("title") == HOSTILE
    shown = _item(page, SPOOF).locator("button.chat-open").get_attribute("title")
    assert shown == "alice\\u202e\\u200bmoc.elpmaxe@"  # the hidden characters, as escapes
    _open(page, HOSTILE)
    _send_and_wait(page, "hello")
    page.goto(server.url + "#chat=" + quote(HOSTILE, safe=""))
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.locator("[data-testid=user-message]", has_text="hello").wait_for()
    assert page.locator("#chat-list img, [data-testid=user-message] img, img[onerror]").count() == 0
    assert page.evaluate("document.body.dataset.pwned") is None
    assert _stored(server, HOSTILE) == [f"hi from {HOSTILE}", "hello"]
    _item(page, HOSTILE).locator("[data-testid=delete-chat]").click()
    _item(page, HOSTILE).wait_for(state="detached")
    assert server.segments(HOSTILE) == []
    assert page.evaluate("document.body.dataset.pwned") is None


def test_an_id_the_page_cannot_serve_is_listed_but_not_opened(browser: Any, tmp_path: Path) -> None:
    db = tmp_path / "chats.db"
    write_chats(db, ["line\nbreak", "y" * 512])
    with Server(db) as server:
        context = browser.new_context()
        page = context.new_page()
        page.goto(server.url)
        page.wait_for_selector("body[data-ready=true]")
        broken = _item(page, "line\nbreak".replace("\n", " "))
        assert broken.locator("button.chat-open").is_disabled()
        assert "control character" in str(broken.locator("button.chat-open").get_attribute("title"))
        assert broken.locator("[data-testid=delete-chat]").count() == 0
        long = page.locator("[data-testid=chat-item]", has_text="hi from yyyy")
        long.locator("button.chat-open").click()
        page.locator("[data-testid=answer]", has_text="hello yyyy").wait_for()
        context.close()
