"""The chat page in Debian's Chromium, driven by Playwright, against a real server.

The test starts uvicorn itself (a thread, a free 127.0.0.1 port) serving the demo agent on a
SQLite file in ``tmp_path``. Screenshots go to the test's ``tmp_path``. Without Chromium
these tests skip with the reason, except in CI (``CI=true``), where they fail:
``scripts/install-browser.sh`` installs it (``make install`` runs it).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import SQLiteSession
from lovia.approvals import argument_digest
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

    def __init__(
        self, db: Path, agents: Any = None, token: str | None = None, **options: Any
    ) -> None:
        import uvicorn

        from lovia.web import ChatStore, create_app

        self.db = db
        options.setdefault("titles", False)
        app = create_app(
            demo_agent(delay=0.02) if agents is None else agents,
            store=options.pop("store", None) or ChatStore.sqlite(db),
            token=token,
            **options,
        )
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        # a page still open holds its event stream open: the server ends it after 1 s when it
        # stops (as `lovia web` does after 3 s), where it would wait for the page to go
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            timeout_graceful_shutdown=1,
        )
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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for a test file (launching it is most of a short test's time). Each test
    opens contexts of its own, which share no cookies, storage or pages. Module scope, not
    session: Playwright's sync API holds this thread's event loop while it runs, which the
    asyncio tests of the next file need."""
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
    # ...from the stored chat; this tab still shows the card, marked stopped
    page.wait_for_selector("[data-testid=tool-call][data-status=stopped]")
    assert page.locator("[data-testid=tool-call]").count() == 1
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


def _user_texts(server: Server, page: Any) -> list[Any]:
    segments = server.segments(_chat_id(page))
    return [e.content for s in segments for e in s.entries if e.type == "input"]


def test_model_output_cannot_stand_in_for_the_page_controls(page: Any, server: Server) -> None:
    """Issue 14 item 2: an answer carrying a hidden textarea with the composer's id, a fake
    Stop button and a form keeps none of them; the next Enter sends what the user typed."""
    probe = (
        '<textarea id="input" name="content" hidden>attacker text</textarea>'
        '<button id="stop" type="button">fake stop</button>'
        '<form action="/api/chat/cancel" method="post"><input name="q"><button>go</button>'
        "</form>"
        '<div id="send" data-testid="regenerate" style="position:fixed;inset:0">cover</div>'
        '<select id="chat-list"><option>x</option></select><label for="input">label</label>'
    )
    _send(page, probe)
    _wait_idle(page)
    answer = page.locator("[data-testid=answer]").last
    for selector in (
        "textarea",
        "button:not([data-testid])",
        "form",
        "input",
        "select",
        "label",
        "[id]",
        "[name]",
        "[style]",
        "[data-testid=regenerate]:not(button)",
    ):
        assert answer.locator(selector).count() == 0, selector
    assert page.locator("#input").count() == 1 and page.locator("#stop").count() == 1
    _send(page, "calculate 2 + 2")
    page.wait_for_selector("#stop:not([hidden])")
    _wait_idle(page)
    users = _user_texts(server, page)
    assert users == [probe, "calculate 2 + 2"]  # the hidden "attacker text" was not sent


def test_a_stopped_answer_is_marked_and_regenerate_belongs_to_it(
    page: Any, server: Server, tmp_path: Path
) -> None:
    """Issue 17: after Stop the last answer says "(stopped)" (after a reload too), and its
    Regenerate answers the stopped message again while the earlier answer stays shown."""
    _send(page, "calculate 6 * 7")
    _wait_idle(page)
    _send(page, "wait 20")
    page.wait_for_selector("[data-testid=tool-call] >> text=running…")
    page.click("#stop")
    page.wait_for_selector("#send:not([hidden])")
    page.wait_for_selector("[data-testid=ended]")
    page.screenshot(path=str(tmp_path / "stopped.png"))
    for reloaded in (False, True):
        if reloaded:
            page.reload()
            page.wait_for_selector("body[data-ready=true]")
        answers = page.locator("[data-testid=answer]")
        assert answers.count() == 2
        assert "(stopped)" in answers.last.inner_text()
        assert "(stopped)" not in answers.first.inner_text()
        assert answers.last.locator("[data-testid=regenerate]").count() == 1
        assert answers.first.locator("[data-testid=regenerate]").count() == 0
    page.click("[data-testid=regenerate]")
    page.wait_for_selector("[data-testid=tool-call] >> text=running…")
    assert "The result is 42." in page.locator("[data-testid=answer]").first.inner_text()
    page.click("#stop")
    page.wait_for_selector("[data-testid=ended]")
    segments = server.segments(_chat_id(page))
    assert [e.content for e in segments[-1].entries if e.type == "input"] == ["wait 20"]


def test_a_message_sent_during_a_run_joins_it(page: Any, server: Server) -> None:
    """Issue 16: Enter while an answer runs sends the message into that run at once (it
    shows at once); the run reads it at its next step and answers it in the same run."""
    _send(page, "wait 1")
    page.wait_for_selector("[data-testid=tool-call] >> text=running…")
    _send(page, "calculate 5 * 5")
    page.wait_for_selector("[data-testid=queued-message] >> text=calculate 5 * 5")
    assert page.locator("#stop").is_visible()  # still the same live answer
    page.wait_for_function(
        "[...document.querySelectorAll('[data-testid=answer]')]"
        ".some(a => a.textContent.includes('25'))"
    )
    _wait_idle(page)
    assert page.locator("[data-testid=queued-message]").count() == 0
    texts = page.locator("[data-testid=user-message]").all_inner_texts()
    assert [t.split("\n")[0] for t in texts] == ["wait 1", "calculate 5 * 5"]
    segments = server.segments(_chat_id(page))
    assert len(segments) == 1  # one run answered both
    assert [e.content for e in segments[0].entries if e.type == "input"] == [
        "wait 1",
        "calculate 5 * 5",
    ]


def test_enter_submits_an_edit(page: Any, server: Server) -> None:
    _send(page, "calculate 1 + 1")
    _wait_idle(page)
    page.locator("[data-testid=edit]").click()
    page.fill("[data-testid=edit-input]", "calculate 3 * 3")
    page.press("[data-testid=edit-input]", "Enter")
    page.wait_for_function(
        "document.querySelector('[data-testid=answer]')?.textContent.includes('9')"
    )
    _wait_idle(page)
    users = _user_texts(server, page)
    assert users == ["calculate 3 * 3"]


def _failing(error: Exception) -> Any:
    from lovia import Agent

    class Failing:
        name = "failing"
        model = "failing"
        supports_json_schema = False

        async def stream(self, entries: Any, **kwargs: Any) -> Any:
            raise error
            yield  # pragma: no cover - makes this an async generator

    return Agent("assistant", model=Failing(), retry=None)  # the run fails at once


@pytest.mark.parametrize("status", [401, 503])
def test_a_failed_run_keeps_the_message_and_shows_the_fix_in_place(
    browser: Any, tmp_path: Path, status: int
) -> None:
    """Issue 17: the user's message stays, the error and its hint show under it, the run
    is marked failed, or interrupted when a retry can fix the error (after a reload too), and
    Retry is offered only when it can work."""
    from lovia.errors import ProviderError

    hint = "check OPENAI_API_KEY" if status == 401 else "the server failed; try again"
    error = ProviderError(f"openai:gpt-4.1 answered HTTP {status}", hint=hint, status_code=status)
    with Server(tmp_path / f"failed{status}.db", agents=_failing(error)) as failing:
        context = browser.new_context(bypass_csp=True)
        p = context.new_page()
        p.goto(failing.url)
        p.wait_for_selector("body[data-ready=true]")
        _send(p, "hello there")
        for reloaded in (False, True):
            if reloaded:
                p.reload()
                p.wait_for_selector("body[data-ready=true]")
            # a 503 is one a retry can fix: the run is interrupted (resumable), not failed
            ended = "did not finish (interrupted)" if status == 503 else "This answer failed"
            p.wait_for_selector(f"[data-testid=pending] >> text={ended}")
            assert p.locator("[data-testid=user-message]").inner_text() == "hello there"
            assert f"HTTP {status}" in p.locator("[data-testid=pending]").inner_text()
            assert hint in p.locator("[data-testid=pending-hint]").inner_text()
            assert p.locator("[data-testid=resume]").count() == (1 if status == 503 else 0)
            assert p.locator("[data-testid=discard]").count() == 1
        if status == 401:
            p.screenshot(path=str(tmp_path / "failed.png"))
        context.close()


def test_a_model_without_its_key_disables_the_input_and_says_why(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lovia import Agent

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with Server(tmp_path / "nokey.db", agents=Agent("assistant", model="openai:gpt-4.1")) as s:
        context = browser.new_context(bypass_csp=True)
        p = context.new_page()
        p.goto(s.url)
        p.wait_for_selector("body[data-ready=true]")
        hint = p.locator("[data-testid=setup-hint]").inner_text()
        assert "no API key" in hint and "OPENAI_API_KEY" in hint
        assert p.locator("#input").is_disabled()
        assert "OPENAI_API_KEY" in str(p.locator("#input").get_attribute("placeholder"))
        p.screenshot(path=str(tmp_path / "no-key.png"))
        context.close()


def test_a_send_refused_because_another_server_answers_keeps_the_message(
    browser: Any, tmp_path: Path
) -> None:
    """Issue 14 item 3 on the page: server B answers the chat; the page of server A sends to
    it, gets 409, and the typed message is back in the composer with the reason."""
    import httpx

    db = tmp_path / "shared.db"
    with Server(db) as one, Server(db) as two:
        started = threading.Event()

        def drive() -> None:
            url = f"{two.url}api/chat/stream"
            body = {"message": "wait 20", "session_id": "shared"}
            with httpx.stream("POST", url, json=body, timeout=60) as r:
                for line in r.iter_lines():
                    if line == "event: tool_call":
                        started.set()

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        assert started.wait(30)
        context = browser.new_context(bypass_csp=True)
        p = context.new_page()
        p.goto(one.url + "#chat=shared")
        p.wait_for_selector("body[data-ready=true]")
        p.wait_for_selector("[data-testid=busy-elsewhere]")
        assert p.locator("[data-testid=resume]").count() == 0  # it is not ours to resume
        _send(p, "are you there?")
        p.wait_for_selector("[data-testid=error] >> text=busy")
        assert p.locator("#input").input_value() == "are you there?"
        assert p.locator("[data-testid=user-message]", has_text="are you there?").count() == 0
        httpx.post(f"{two.url}api/chat/cancel?session_id=shared", timeout=30)
        driver.join(timeout=30)
        context.close()
        users = [e.content for s in one.segments("shared") for e in s.entries if e.type == "input"]
        assert users == ["wait 20"]


def test_a_page_on_another_port_cannot_use_the_token_cookie(browser: Any, tmp_path: Path) -> None:
    """Issue 14 item 4: the user opened server A with its token; a page served on another
    port of the same host (server B) posts to A with the browser's cookies: refused (403),
    and A's run goes on. A's own page still works."""
    with (
        Server(tmp_path / "a.db", token="s3cret") as a,
        Server(tmp_path / "b.db") as b,
    ):
        context = browser.new_context(bypass_csp=True)
        mine = context.new_page()
        mine.goto(a.url + "?token=s3cret")
        mine.wait_for_selector("body[data-ready=true]")
        cookies = {c["name"] for c in context.cookies()}
        assert cookies == {f"lovia_token_{a.port}"}
        _send(mine, "wait 20")
        mine.wait_for_selector("[data-testid=tool-call] >> text=running…")
        chat = _chat_id(mine)
        other = context.new_page()
        other.goto(b.url)
        other.wait_for_selector("body[data-ready=true]")
        status = other.evaluate(
            """async ([url, chat]) => {
                const r = await fetch(`${url}api/chat/cancel?session_id=${chat}`,
                    { method: "POST", credentials: "include", mode: "no-cors" });
                return r.type;
            }""",
            [a.url, chat],
        )
        assert status == "opaque"  # sent; the answer is hidden from the page either way
        import httpx

        auth = {"Authorization": "Bearer s3cret"}
        detail = httpx.get(f"{a.url}api/sessions/{chat}", headers=auth, timeout=30).json()
        assert detail["live"] is not None  # the run was not stopped (a stop waits for it)
        mine.click("#stop")
        mine.wait_for_selector("[data-testid=ended]")
        context.close()


def _open(browser: Any, url: str) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1200, "height": 800}, bypass_csp=True)
    p = context.new_page()
    p.set_default_timeout(15_000)
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    p.goto(url)
    p.wait_for_selector("body[data-ready=true]")
    return context, p, errors


def test_an_approval_given_after_a_restart_runs_the_tool_once(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15: the call waits in the checkpoint; a new server shows it and Approve runs
    it once, then the model's answer shows. The arguments are shown as text only."""
    from .apps import PAYEE, paying

    ledger = tmp_path / "paid.txt"
    monkeypatch.setenv("LOVIA_TEST_PAID", str(ledger))
    db = tmp_path / "approve.db"
    with Server(db, agents=paying) as first:
        context, p, errors = _open(browser, first.url)
        _send(p, "pay bob")
        card = p.locator("[data-testid=approval]")
        card.wait_for()
        assert "pay" in card.inner_text()
        assert json.dumps(PAYEE) in card.locator("[data-testid=approval-args]").inner_text()
        chat = _chat_id(p)
        context.close()
        assert errors == []
    assert not ledger.exists()
    with Server(db, agents=paying) as second:
        context, p, errors = _open(browser, f"{second.url}#chat={chat}")
        card = p.locator("[data-testid=approval]")
        card.wait_for()
        assert json.dumps(PAYEE) in card.locator("[data-testid=approval-args]").inner_text()
        assert p.evaluate("document.body.dataset.pwned") is None  # the markup stayed text
        p.screenshot(path=str(tmp_path / "approval.png"))
        with p.expect_request(lambda r: r.url.endswith("/api/chat/approve")) as sent:
            p.click("[data-testid=approve]")
        # the decision names what the card showed: the run and the call's digest (issue 27)
        decision = json.loads(sent.value.post_data or "{}")
        assert decision["run_id"] and decision["digest"] == argument_digest(
            "pay", json.dumps({"amount": 5, "to": PAYEE})
        )
        p.locator("[data-testid=answer]", has_text="after the payment: paid 5 to").wait_for()
        _wait_idle(p)
        assert p.locator("[data-testid=approval]").count() == 0
        assert p.evaluate("document.body.dataset.pwned") is None
        context.close()
        assert errors == []
    assert ledger.read_text().splitlines() == [f"5 {PAYEE}"]


def test_invisible_characters_in_arguments_are_shown_not_obeyed(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person approves what the card shows: a right-to-left override or a zero-width
    character in the model's arguments must not make it show another text (the bytes of
    the call and the shown text would differ); they are shown as escapes."""
    import unicodedata

    from .apps import paying_hidden

    monkeypatch.setenv("LOVIA_TEST_PAID", str(tmp_path / "paid.txt"))
    with Server(tmp_path / "hidden.db", agents=paying_hidden) as server:
        context, p, errors = _open(browser, server.url)
        _send(p, "pay bob")
        card = p.locator("[data-testid=approval]")
        card.wait_for()
        shown = card.locator("[data-testid=approval-args]").inner_text()
        hidden = [c for c in shown if unicodedata.category(c) == "Cf"]
        assert hidden == [], [f"U+{ord(c):04X}" for c in hidden]
        for escape in ("\\u202e", "\\u202c", "\\u200b"):
            assert escape in shown.lower(), shown
        tool = p.locator("[data-testid=tool-call]").first
        assert not [c for c in tool.inner_text() if unicodedata.category(c) == "Cf"]
        context.close()
        assert errors == []


def test_a_rejection_with_a_reason_shows_the_models_follow_up(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .apps import paying

    ledger = tmp_path / "paid.txt"
    monkeypatch.setenv("LOVIA_TEST_PAID", str(ledger))
    with Server(tmp_path / "reject.db", agents=paying) as server:
        context, p, errors = _open(browser, server.url)
        _send(p, "pay bob")
        card = p.locator("[data-testid=approval]")
        card.wait_for()
        card.locator("[data-testid=approval-reason]").fill("too expensive")
        card.locator("[data-testid=reject]").click()
        p.locator(
            "[data-testid=answer]",
            has_text="after the payment: Tool pay was not approved. Reason: too expensive",
        ).wait_for()
        _wait_idle(p)
        assert p.locator("[data-testid=approval]").count() == 0
        segments = server.segments(_chat_id(p))
        assert [e.type for s in segments for e in s.entries] == [
            "input",
            "tool_call",
            "tool_result",
            "assistant_text",
        ]
        context.close()
        assert errors == []
    assert not ledger.exists()


def test_stop_on_a_waiting_call_rejects_it_and_the_chat_goes_on(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .apps import paying

    ledger = tmp_path / "paid.txt"
    monkeypatch.setenv("LOVIA_TEST_PAID", str(ledger))
    with Server(tmp_path / "stop.db", agents=paying) as server:
        context, p, errors = _open(browser, server.url)
        _send(p, "pay bob")
        p.locator("[data-testid=approval]").wait_for()
        p.click("[data-testid=stop-pending]")
        p.locator("[data-testid=ended]", has_text="stopped").wait_for()
        assert p.locator("[data-testid=approval]").count() == 0
        tool = p.locator("[data-testid=tool-call]")
        tool.locator("summary").click()
        assert "not approved. Reason: stopped" in tool.locator(".tool-result").inner_text()
        _send(p, "pay bob again")  # not deadlocked: the next message gets its own answer
        p.locator("[data-testid=approval]").wait_for()
        assert p.locator("[data-testid=user-message]").count() == 2
        context.close()
        assert errors == []
    assert not ledger.exists()
