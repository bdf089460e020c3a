"""Settings → General in Chromium (issue 31): the browser's own preferences, there with or
without a config.json, as on 0.9.119's page: language, theme, the message text size, what
Enter does, a desktop notification when a run finishes in a hidden tab, and a tone when a run
finishes. Each is kept in localStorage under 0.9.119's key and applies at load. The
Notification and AudioContext spies wrap the browser's own; ``document.hidden`` is the one
thing a test sets, as a hidden tab cannot be made in headless Chromium on purpose."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_browser import Server
from .test_page_browser import Pages, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses

HIDDEN = """
Object.defineProperty(Document.prototype, "hidden", {
  configurable: true, get() { return Boolean(window.__hidden); } });
"""

NOTIFICATION_SPY = """
(() => {
  const Real = window.Notification;
  window.__notes = [];
  window.__asked = 0;
  class Spy {
    constructor(title, options) { window.__notes.push({ title, body: (options || {}).body }); }
    static get permission() { return Real.permission; }
    static requestPermission() { window.__asked += 1; return Real.requestPermission(); }
  }
  window.Notification = Spy;
})();
"""

AUDIO_SPY = """
(() => {
  const Real = window.AudioContext;
  window.__tones = 0;
  window.AudioContext = class extends Real {
    createOscillator() { window.__tones += 1; return super.createOscillator(); }
  };
})();
"""


@pytest.fixture
def demo(tmp_path: Path, pages: Pages) -> Iterator[Server]:
    with Server(tmp_path / "lovia.db") as running:
        yield running
        pages.close()


def _open_with(pages: Pages, url: str, *scripts: str, **context: Any) -> Any:
    page = pages.open(url, **context)
    for script in scripts:
        page.add_init_script(script)
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    return page


def _general(page: Any) -> Any:
    page.click("#settings-btn")
    pane = page.locator("[data-testid=settings-general]")
    pane.wait_for()
    return pane


def _close(page: Any) -> None:
    page.locator("[data-testid=settings-dialog] [data-testid=dialog-close]").click()
    page.locator("[data-testid=settings-dialog]").wait_for(state="detached")


def _user_messages(page: Any) -> int:
    return int(page.locator("#messages .msg.user").count())


def test_settings_opens_on_general_without_a_config_json(
    pages: Pages, demo: Server, tmp_path: Path
) -> None:
    page = pages.open(demo.url, bypass_csp=False, ready=False)
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    assert page.locator("#settings-btn").is_visible()
    pane = _general(page)
    dialog = page.locator("[data-testid=settings-dialog]")
    assert dialog.locator("[role=tab]").all_inner_texts() == ["General"]
    for testid in ("language", "theme", "text-size", "enter", "notify", "sound"):
        assert pane.locator(f"[data-testid=pref-{testid}]").is_visible(), testid
    pane.locator("[data-testid=pref-theme]").select_option("dark")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.screenshot(path=str(tmp_path / "general-en.png"))
    # the language applies at once, to the pane too
    pane.locator("[data-testid=pref-language]").select_option("zh")
    page.locator("[data-testid=settings-dialog] [role=tab]", has_text="通用").wait_for()
    pane = page.locator("[data-testid=settings-general]")
    assert "回车键" in pane.inner_text() and "提示音" in pane.inner_text()
    assert page.locator("#new-chat").inner_text() == "新对话"  # and the page around it
    page.screenshot(path=str(tmp_path / "general-zh.png"))
    _close(page)
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    assert page.evaluate(
        "[document.documentElement.lang, document.documentElement.dataset.theme]"
    ) == [
        "zh",
        "dark",
    ]
    assert violations == []


def test_text_size_applies_and_survives_a_reload(pages: Pages, demo: Server) -> None:
    page = pages.open(demo.url)
    size = "() => getComputedStyle(document.getElementById('messages')).fontSize"
    assert page.evaluate(size) == "15px"
    _general(page).locator("[data-testid=pref-text-size]").select_option("lg")
    assert page.evaluate(size) == "17.1px"
    assert page.evaluate("getComputedStyle(document.getElementById('input')).fontSize") == "17.1px"
    _close(page)
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    assert page.evaluate(size) == "17.1px"
    assert _general(page).locator("[data-testid=pref-text-size]").input_value() == "lg"
    # 0.9.119's page kept it under the same key: its users' pick applies here
    page.evaluate("localStorage.setItem('lovia-text-size', 'sm')")
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    assert page.evaluate(size) == "13.8px"


def test_the_enter_key_setting_changes_what_enter_does(pages: Pages, demo: Server) -> None:
    page = pages.open(demo.url)
    send(page, "calculate 6 * 7")  # the default: Enter sends
    wait_idle(page)
    assert _user_messages(page) == 1
    _general(page).locator("[data-testid=pref-enter]").select_option("newline")
    _close(page)
    assert page.get_attribute("#send", "title") == "Send (Ctrl/Cmd+Enter); Enter starts a new line"
    page.fill("#input", "calculate 2 * 3")
    page.press("#input", "Enter")
    assert page.input_value("#input") == "calculate 2 * 3\n"  # a new line, nothing sent
    assert _user_messages(page) == 1
    page.press("#input", "Control+Enter")
    page.wait_for_function("document.querySelectorAll('#messages .msg.user').length === 2")
    wait_idle(page)
    # kept: after a reload Enter still starts a line, and Shift+Enter never sends
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    page.fill("#input", "x")
    page.press("#input", "Enter")
    page.press("#input", "Shift+Enter")
    assert page.input_value("#input") == "x\n\n"
    assert page.evaluate("localStorage.getItem('lovia-enter-send')") == "0"


def test_notifications_ask_on_the_click_and_come_when_a_hidden_tab_finishes_a_run(
    pages: Pages, demo: Server
) -> None:
    page = _open_with(pages, demo.url, HIDDEN, NOTIFICATION_SPY, permissions=["notifications"])
    page.evaluate("window.__hidden = true")
    send(page, "calculate 6 * 7")  # not turned on: no notification, and nothing asked
    wait_idle(page)
    assert page.evaluate("[window.__asked, window.__notes.length]") == [0, 0]
    pane = _general(page)
    assert not pane.locator("[data-testid=pref-notify]").is_checked()
    pane.locator("[data-testid=pref-notify]").check()
    page.wait_for_function("localStorage.getItem('lovia-notify') === '1'")
    assert page.evaluate("window.__asked") == 1  # asked on the user's click
    _close(page)
    send(page, "calculate 2 * 3")
    wait_idle(page)
    page.wait_for_function("window.__notes.length === 1")
    note = page.evaluate("window.__notes[0]")
    assert note["title"] == page.title()
    assert note["body"].startswith("Finished: ")
    # a visible tab: the page shows the answer, no notification
    page.evaluate("window.__hidden = false")
    send(page, "calculate 1 + 1")
    wait_idle(page)
    assert page.evaluate("window.__notes.length") == 1
    # turned off: none again
    _general(page).locator("[data-testid=pref-notify]").uncheck()
    _close(page)
    page.evaluate("window.__hidden = true")
    send(page, "calculate 3 + 3")
    wait_idle(page)
    assert page.evaluate("[window.__asked, window.__notes.length]") == [1, 1]


def test_the_sound_setting_persists_and_a_finished_run_plays_a_tone(
    pages: Pages, demo: Server
) -> None:
    page = _open_with(pages, demo.url, AUDIO_SPY)
    send(page, "calculate 6 * 7")  # off by default: silent
    wait_idle(page)
    assert page.evaluate("window.__tones") == 0
    _general(page).locator("[data-testid=pref-sound]").check()
    assert page.evaluate("localStorage.getItem('lovia-sound')") == "1"
    played = page.evaluate("window.__tones")
    assert played > 0  # a preview on turning it on
    _close(page)
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    assert _general(page).locator("[data-testid=pref-sound]").is_checked()
    _close(page)
    send(page, "calculate 2 * 3")
    wait_idle(page)
    page.wait_for_function("window.__tones > 0")


def test_what_a_0_9_119_user_saved_applies_here(pages: Pages, demo: Server) -> None:
    saved = """
    if (!sessionStorage.getItem("seeded")) {
      sessionStorage.setItem("seeded", "1");
      const old = { "lovia-theme": "dark", "lovia-lang": "zh", "lovia-text-size": "lg",
        "lovia-enter-send": "0", "lovia-sound": "1" };
      for (const [k, v] of Object.entries(old)) localStorage.setItem(k, v);
    }
    """
    page = _open_with(pages, demo.url, saved)
    root = "[document.documentElement.dataset.theme, document.documentElement.lang]"
    assert page.evaluate(root) == ["dark", "zh"]
    assert (
        page.evaluate("getComputedStyle(document.getElementById('messages')).fontSize") == "17.1px"
    )
    page.fill("#input", "x")
    page.press("#input", "Enter")
    assert page.input_value("#input") == "x\n"
    pane = _general(page)
    assert pane.locator("[data-testid=pref-sound]").is_checked()
    assert pane.locator("[data-testid=pref-theme]").input_value() == "dark"
    assert pane.locator("[data-testid=pref-language]").input_value() == "zh"
