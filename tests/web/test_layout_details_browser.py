"""The chat page's smaller layout details in Chromium (issue 31), as 0.9.119's page has them:
a code block's language label and Copy button, the sidebar folding away on a wide screen
(remembered across a reload), a user message's hidden actions taking no room of their own,
and the composer's hint staying on its one line on a phone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent
from lovia.testing import ScriptedProvider, text

from .test_browser import Server
from .test_page_browser import Pages, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses

CODE = (
    "Two blocks:\n\n```python\nprint('hi')\n```\n\n"
    "```<img src=x onerror=alert(1)>\nraw\n```\n\nDone."
)


@pytest.fixture
def coder(tmp_path: Path, pages: Pages) -> Iterator[Server]:
    agent = Agent(name="bot", model=ScriptedProvider([text(CODE)] * 4))
    with Server(tmp_path / "lovia.db", agents=agent) as running:
        yield running
        pages.close()


def test_a_code_block_names_its_language_and_copies_its_code(
    pages: Pages, coder: Server, tmp_path: Path
) -> None:
    page = pages.open(coder.url, permissions=["clipboard-read", "clipboard-write"])
    send(page, "code please")
    wait_idle(page)
    answer = page.locator("[data-testid=answer]").last
    labels = answer.locator("pre [data-testid=code-lang]")
    assert labels.all_inner_texts() == ["PYTHON", "<IMG"]  # shown in capitals, as 0.9.119
    assert labels.nth(0).text_content() == "python"
    # the fence's info string is only ever text: no element came from it
    assert answer.locator("img").count() == 0
    assert labels.nth(1).evaluate("(n) => n.children.length") == 0
    block = answer.locator("pre").first
    copy = block.locator("[data-testid=code-copy]")
    assert copy.get_attribute("type") == "button" and copy.inner_text() == "Copy"
    block.hover()
    page.screenshot(path=str(tmp_path / "code.png"))
    copy.click()
    page.wait_for_function(
        "document.querySelector('[data-testid=code-copy]').textContent === 'Copied'"
    )
    assert page.evaluate("navigator.clipboard.readText()") == "print('hi')"
    # the code itself is still highlighted, and the bar is not part of it
    assert block.locator("code").inner_text().strip() == "print('hi')"
    assert block.locator("code .hljs-string").count() == 1


def test_the_sidebar_folds_away_and_stays_folded_after_a_reload(
    pages: Pages, coder: Server, tmp_path: Path
) -> None:
    page = pages.open(coder.url, locale="en-US")
    sidebar = page.locator("[data-part=sidebar]")
    collapse = sidebar.get_by_role("button", name="Hide the sidebar")
    expand = page.locator("[data-part=topbar]").get_by_role("button", name="Show the sidebar")
    assert collapse.is_visible() and expand.is_hidden()
    collapse.click()
    assert sidebar.is_hidden() and expand.is_visible()
    box = page.locator("[data-part=topbar]").bounding_box()
    assert box and box["x"] == 0 and box["width"] == 1200  # the chat takes the whole width
    assert page.evaluate("localStorage.getItem('lovia-sidebar-collapsed')") == "1"
    page.screenshot(path=str(tmp_path / "folded.png"))
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert sidebar.is_hidden() and expand.is_visible()
    expand.click()
    assert sidebar.is_visible() and expand.is_hidden()
    assert page.evaluate("localStorage.getItem('lovia-sidebar-collapsed')") == "0"
    # a phone has its drawer (the menu button) and no fold button
    phone = pages.open(coder.url, viewport={"width": 390, "height": 844})
    assert phone.locator("#sidebar-collapse").is_hidden()
    assert phone.locator("#sidebar-expand").is_hidden()
    assert phone.locator("#menu").is_visible()


def test_a_user_messages_hidden_actions_take_no_room_under_it(
    pages: Pages, coder: Server, tmp_path: Path
) -> None:
    page = pages.open(coder.url)
    send(page, "code please")
    wait_idle(page)
    turn = page.locator('[data-part=turn][data-role="user"]').last
    bubble = turn.locator(".user-text")
    actions = turn.locator(":scope > .actions")
    assert actions.locator("button").count() >= 1  # it has actions, hidden until hovered
    turn_box, bubble_box = turn.bounding_box(), bubble.bounding_box()
    assert turn_box and bubble_box
    # the turn ends where its bubble does: no hidden row below it
    assert turn_box["y"] + turn_box["height"] == pytest.approx(
        bubble_box["y"] + bubble_box["height"], abs=1
    )
    # hovered, the actions show under the bubble, over nothing of the answer below
    turn.hover()
    page.wait_for_function(
        "getComputedStyle(document.querySelector('.msg.user > .actions')).opacity === '1'"
    )
    first = actions.locator("button").first
    box = first.bounding_box()
    assert box and box["y"] >= bubble_box["y"] + bubble_box["height"]
    hit = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('.msg.user > .actions') !== null",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert hit
    answer = page.locator("[data-testid=answer]").last.bounding_box()
    assert answer and box["y"] + box["height"] <= answer["y"]
    page.screenshot(path=str(tmp_path / "user-actions.png"))


def test_the_composers_hint_stays_on_one_line_on_a_phone(
    pages: Pages, coder: Server, tmp_path: Path
) -> None:
    for lang in ("en-US", "zh-CN"):
        page = pages.open(coder.url, locale=lang, viewport={"width": 390, "height": 844})
        box: Any = page.locator("#input")
        assert box.input_value() == ""
        # a hint that wrapped would be taller than the one-line box (and cut off in it)
        high, shown = box.evaluate("(n) => [n.scrollHeight, n.clientHeight]")
        assert high <= shown, lang
        page.screenshot(path=str(tmp_path / f"phone-{lang}.png"))


def test_a_failed_runs_message_and_answer_are_not_boxed_in_black(
    pages: Pages, tmp_path: Path
) -> None:
    """A run that did not finish marks its message's bubble with a dashed line of the
    bubble's own colour; the message and the answer get no frame of their own (a bare
    ``border-style`` drew a thick black dashed box around each, which 0.9.119's page never
    shows)."""
    from lovia.errors import ProviderError

    from .test_browser import _failing

    error = ProviderError("openai:gpt-4.1 answered HTTP 401", hint="check the key", status_code=401)
    with Server(tmp_path / "failed.db", agents=_failing(error)) as failing:
        page = pages.open(failing.url)
        send(page, "hello there")
        page.wait_for_selector("[data-testid=pending] >> text=This answer failed")
        frames = page.eval_on_selector_all(
            ".msg.unfinished",
            "(ns) => ns.map((n) => getComputedStyle(n).borderTopWidth)",
        )
        assert len(frames) == 2  # the message and the answer
        assert set(frames) == {"0px"}
        bubble = page.locator("[data-testid=user-message] > :not(.actions)").first.evaluate(
            "(n) => { const s = getComputedStyle(n);"
            " return [s.borderTopWidth, s.borderTopStyle, s.borderTopColor, s.color]; }"
        )
        assert bubble[:2] == ["1px", "dashed"]
        assert bubble[2] != bubble[3]  # the bubble's line, not the text's colour
        page.screenshot(path=str(tmp_path / "failed.png"))
        pages.close()
