"""The chat page in Debian's Chromium, driven by Playwright, against a real server.

The test starts uvicorn itself (a thread, a free 127.0.0.1 port) serving the demo agent on a
SQLite file in ``tmp_path``. Screenshots go to the test's ``tmp_path``. Without Chromium
these tests skip with the reason, except in CI (``CI=true``), where they fail:
``scripts/install-browser.sh`` installs it (``make install`` runs it).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession
from lovia.demo import demo_agent

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _need(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required in CI: run scripts/install-browser.sh)")
    pytest.skip(f"{reason}: run scripts/install-browser.sh to install it")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """uvicorn serving ``create_app`` in a thread; ``url`` is where it listens."""

    def __init__(self, db: Path, agents: Any = None) -> None:
        import uvicorn

        from lovia.web import create_app

        self.db = db
        app = create_app(
            demo_agent(delay=0.02) if agents is None else agents,
            session=SQLiteSession(db, wal=True),
            checkpointer=SQLiteCheckpointer(db, wal=True),
        )
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def segments(self, chat_id: str) -> list[Any]:
        async def read() -> list[Any]:
            async with SQLiteSession(self.db, wal=True) as s:
                return await s.segments(chat_id)

        # Playwright's sync API owns this thread's event loop: read on another thread
        found: list[Any] = []
        reader = threading.Thread(target=lambda: found.extend(asyncio.run(read())))
        reader.start()
        reader.join()
        return found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(tmp_path / "lovia.db") as running:
        yield running


@pytest.fixture
def browser() -> Iterator[Any]:
    _need(os.path.exists(CHROMIUM), f"Chromium is not installed at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need(False, "the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    # the page's CSP forbids eval, which Playwright's waits use; bypassing it also proves
    # the XSS probe is stopped by the sanitizer alone, not only by the CSP
    context = browser.new_context(viewport={"width": 1200, "height": 800}, bypass_csp=True)
    p = context.new_page()
    p.set_default_timeout(15_000)
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    p.goto(server.url)
    p.wait_for_selector("body[data-ready=true]")
    yield p
    context.close()
    assert errors == [], errors


def _send(page: Any, text: str) -> None:
    page.fill("#input", text)
    page.press("#input", "Enter")


def _wait_idle(page: Any) -> None:
    page.wait_for_selector("#send:not([hidden])")
    page.wait_for_selector("[data-testid=regenerate], [data-testid=pending]")


def _chat_id(page: Any) -> str:
    return str(page.evaluate("location.hash")).split("chat=")[1]


def test_a_message_streams_into_the_page(page: Any, tmp_path: Path) -> None:
    _send(page, "tell me a story")
    answer = page.locator("[data-testid=answer]").last
    page.wait_for_function(
        "document.querySelector('[data-testid=answer]')?.textContent.includes('journal')"
    )
    midway = answer.inner_text()
    assert "Once upon a time" in midway and "The end." not in midway  # still streaming
    assert page.locator("#stop").is_visible()
    page.screenshot(path=str(tmp_path / "streaming.png"))
    _wait_idle(page)
    assert "The end." in answer.inner_text()
    assert page.locator("[data-testid=chat-item]").first.inner_text().startswith("tell me")
    page.screenshot(path=str(tmp_path / "desktop.png"))


def test_tool_calls_show_folded_with_arguments_and_result(page: Any) -> None:
    _send(page, "calculate 6 * 7")
    _wait_idle(page)
    tool = page.locator("[data-testid=tool-call]")
    assert tool.count() == 1
    assert tool.locator(".tool-result").is_hidden()  # folded until opened
    tool.locator("summary").click()
    assert '"expression": "6 * 7"' in tool.locator(".tool-args").inner_text()
    assert tool.locator(".tool-result").inner_text() == "42"
    assert "The result is 42." in page.locator("[data-testid=answer]").inner_text()


def test_the_stop_button_stops_a_run_mid_tool(page: Any, server: Server) -> None:
    _send(page, "wait 20")
    page.wait_for_selector("[data-testid=tool-call] >> text=running…")
    page.click("#stop")
    page.wait_for_selector("#send:not([hidden])")
    segments = server.segments(_chat_id(page))
    assert len(segments) == 1
    assert [e.type for e in segments[0].entries] == ["input"]  # the dangling call is gone
    assert page.locator("[data-testid=tool-call]").count() == 0
    assert page.locator("[data-testid=user-message]").inner_text().startswith("wait 20")


def test_edit_and_resend_replaces_the_rest_of_the_chat(page: Any, server: Server) -> None:
    _send(page, "calculate 1 + 1")
    _wait_idle(page)
    _send(page, "hello")
    _wait_idle(page)
    first = page.locator("[data-testid=user-message]").first
    first.locator("[data-testid=edit]").click()
    page.fill("[data-testid=edit-input]", "calculate 2 * 21")
    page.click("[data-testid=edit-save]")
    page.wait_for_function(
        "document.querySelector('[data-testid=answer]')?.textContent.includes('42')"
    )
    _wait_idle(page)
    users = page.locator("[data-testid=user-message]")
    assert users.count() == 1 and users.inner_text().startswith("calculate 2 * 21")
    entries = [e for s in server.segments(_chat_id(page)) for e in s.entries]
    assert entries[0].content == "calculate 2 * 21" and len(entries) == 4


def test_regenerate_answers_the_last_message_again(page: Any, server: Server) -> None:
    _send(page, "hello")
    _wait_idle(page)
    before = server.segments(_chat_id(page))
    page.click("[data-testid=regenerate]")
    page.wait_for_selector("#stop:not([hidden])")
    _wait_idle(page)
    after = server.segments(_chat_id(page))
    assert [s.run_id for s in after] != [s.run_id for s in before]
    assert [e.content for e in after[0].entries] == [e.content for e in before[0].entries]
    assert page.locator("[data-testid=answer]").count() == 1


def test_a_reload_mid_run_shows_the_run_going_on(page: Any, tmp_path: Path) -> None:
    _send(page, "wait 2")
    page.wait_for_selector("[data-testid=tool-call] >> text=running…")
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("[data-testid=tool-call]")  # replayed from the live run
    assert page.locator("#stop").is_visible()
    page.wait_for_function(
        "document.querySelector('[data-testid=answer]')?.textContent.includes('waited 2')"
    )
    _wait_idle(page)
    assert page.locator("[data-testid=user-message]").count() == 1
    page.screenshot(path=str(tmp_path / "after-reload.png"))


def test_model_output_with_script_and_onerror_stays_inert(page: Any) -> None:
    """XSS probe: the demo echoes the markup as its Markdown answer; nothing may run."""
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    probe = (
        '<img src="x" onerror="window.__xss = 1; alert(1)">'
        "<script>window.__xss = 2</script>"
        '<a href="javascript:window.__xss=3">link</a>'
    )
    _send(page, probe)
    _wait_idle(page)
    answer = page.locator("[data-testid=answer]").last
    assert answer.locator("script").count() == 0
    assert answer.locator("[onerror]").count() == 0
    assert answer.locator("a[href^=javascript]").count() == 0
    answer.locator("a", has_text="link").click()
    page.wait_for_timeout(300)  # give any handler the chance to run; the check is its absence
    assert page.evaluate("window.__xss") is None
    assert dialogs == []


def test_the_page_fits_a_phone(browser: Any, server: Server, tmp_path: Path) -> None:
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, bypass_csp=True
    )
    p = context.new_page()
    p.goto(server.url)
    p.wait_for_selector("body[data-ready=true]")
    _send(p, "calculate 3 * 3")
    _wait_idle(p)
    assert p.locator("#menu").is_visible()
    box = p.locator("#sidebar").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 0  # off screen until asked for
    width = p.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing forces sideways scrolling
    p.screenshot(path=str(tmp_path / "phone.png"))
    p.click("#menu")
    p.wait_for_function("document.getElementById('sidebar').getBoundingClientRect().x >= 0")
    p.screenshot(path=str(tmp_path / "phone-menu.png"))
    context.close()


def test_without_a_model_the_page_says_which_variables_to_set(browser: Any, tmp_path: Path) -> None:
    with Server(tmp_path / "none.db", agents={}) as bare:
        context = browser.new_context(bypass_csp=True)
        p = context.new_page()
        p.goto(bare.url)
        p.wait_for_selector("body[data-ready=true]")
        hint = p.locator("[data-testid=setup-hint]").inner_text()
        assert "LOVIA_MODEL" in hint and "OPENAI_API_KEY" in hint and "--demo" in hint
        assert p.locator("#input").is_disabled()
        p.screenshot(path=str(tmp_path / "no-model.png"))
        context.close()


def test_a_run_cut_off_by_a_restart_is_offered_and_resumed(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page lists the interrupted run on start and resumes it from its checkpoint."""
    from .apps import agents

    db = tmp_path / "restart.db"
    monkeypatch.setenv("LOVIA_TEST_BLOCK", "1")  # the first server's tool hangs
    with Server(db, agents=agents) as first:
        context = browser.new_context(bypass_csp=True)
        p = context.new_page()
        p.goto(first.url)
        p.wait_for_selector("body[data-ready=true]")
        _send(p, "go")
        p.wait_for_selector("[data-testid=tool-call] >> text=running…")
        context.close()  # the server shuts down next, interrupting the run
    monkeypatch.delenv("LOVIA_TEST_BLOCK")
    with Server(db, agents=agents) as second:
        context = browser.new_context(bypass_csp=True)
        p = context.new_page()
        p.goto(second.url)
        p.wait_for_selector("body[data-ready=true]")
        p.click("[data-testid=open-resumable]")
        p.wait_for_selector("[data-testid=pending] >> text=interrupted")
        assert "no result yet" in p.locator("[data-testid=tool-call]").inner_text()
        p.screenshot(path=str(tmp_path / "offered.png"))
        p.click("[data-testid=resume]")
        p.locator("[data-testid=answer]", has_text="finished after unblocked once").wait_for()
        _wait_idle(p)
        assert p.locator("[data-testid=pending]").count() == 0
        assert p.locator("[data-testid=user-message]").count() == 1
        context.close()
