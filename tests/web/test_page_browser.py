"""The chat page's features in Chromium (issue 31): the blank chat, the chat list, agents,
export and branching, themes and languages, answers, usage, live tabs, the token prompt and
code highlighting. Each test drives a real server (uvicorn on 127.0.0.1) and skips without
Chromium as ``test_browser.py`` does. Screenshots go to the test's ``tmp_path``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent
from lovia.demo import demo_agent
from lovia.web import ChatUI

from .test_browser import Server, browser

__all__ = ["browser"]  # the fixture, used by name


class Pages:
    """Opens pages on a server; each context's page errors must stay empty."""

    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.contexts: list[Any] = []
        self.errors: list[str] = []

    def open(self, url: str, *, ready: bool = True, **context: Any) -> Any:
        # Playwright's waits use eval, which the page's CSP forbids: bypass it here (the
        # CSP itself is checked by test_csp_holds_with_every_feature)
        context.setdefault("viewport", {"width": 1200, "height": 800})
        context.setdefault("bypass_csp", True)
        ctx = self.browser.new_context(**context)
        self.contexts.append(ctx)
        p = ctx.new_page()
        p.set_default_timeout(15_000)
        p.on("pageerror", lambda exc: self.errors.append(str(exc)))
        p.goto(url)
        if ready:
            p.wait_for_selector("body[data-ready=true]")
        return p

    def close(self) -> None:
        while self.contexts:
            self.contexts.pop().close()


@pytest.fixture
def pages(browser: Any) -> Iterator[Pages]:
    opened = Pages(browser)
    yield opened
    opened.close()
    assert opened.errors == [], opened.errors


@pytest.fixture
def server(tmp_path: Path, pages: Pages) -> Iterator[Server]:
    """The demo agent's server; the pages close before it stops (an open page holds its
    event stream, which the server would wait for)."""
    with Server(tmp_path / "lovia.db") as running:
        yield running
        pages.close()


def send(page: Any, text: str) -> None:
    page.fill("#input", text)
    page.press("#input", "Enter")


def wait_idle(page: Any) -> None:
    page.wait_for_selector("#send:not([hidden])")
    page.wait_for_selector("[data-testid=regenerate], [data-testid=pending]")


def chat_id(page: Any) -> str:
    return str(page.evaluate("decodeURIComponent(location.hash.split('chat=')[1])"))


# -- (1) the blank chat ---------------------------------------------------------------------


def test_the_demo_page_opens_with_a_title_a_description_and_prompts(
    pages: Pages, server: Server, tmp_path: Path
) -> None:
    page = pages.open(server.url)
    welcome = page.locator("[data-part=welcome]")
    assert welcome.is_visible()
    assert welcome.locator("h2").inner_text() == "lovia demo"
    assert "no model is called" in welcome.inner_text()
    examples = page.locator("[data-testid=example]")
    assert examples.all_inner_texts() == [
        "what time is it?",
        "calculate 6 * 7",
        "wait 5",
        "tell me a story",
    ]
    page.screenshot(path=str(tmp_path / "welcome.png"))
    examples.nth(1).click()  # a prompt fills the composer; the user sends it
    assert page.input_value("#input") == "calculate 6 * 7"
    page.press("#input", "Enter")
    wait_idle(page)
    assert welcome.is_hidden()
    assert "42" in page.locator("[data-testid=answer]").inner_text()
    page.click("#new-chat")  # a new chat is blank again
    assert welcome.is_visible()
    page.locator("[data-testid=chat-item]").first.locator(".chat-open").click()
    page.wait_for_selector("[data-testid=answer]")
    assert welcome.is_hidden()


def test_chat_ui_sets_the_blank_chat_and_its_text_stays_text(pages: Pages, tmp_path: Path) -> None:
    ui = ChatUI(
        empty_title="Ask Acme </script><script>window.pwned=1</script>",
        empty_description=["First line", "<b>second</b> & line"],
        empty_examples=["Summarize today's tickets"],
    )
    with Server(tmp_path / "ui.db", ui=ui) as running:
        page = pages.open(running.url)
        welcome = page.locator("[data-part=welcome]")
        assert welcome.locator("h2").inner_text() == (
            "Ask Acme </script><script>window.pwned=1</script>"
        )
        assert welcome.locator("p").all_inner_texts() == ["First line", "<b>second</b> & line"]
        assert page.locator("[data-testid=example]").all_inner_texts() == [
            "Summarize today's tickets"
        ]
        assert page.evaluate("window.pwned") is None
        assert page.locator("#welcome b").count() == 0


# -- (2) the chat list: rename, pin, search, delete -----------------------------------------


def test_chats_are_renamed_pinned_searched_and_deleted(pages: Pages, server: Server) -> None:
    page = pages.open(server.url)
    for text in ("calculate 1 + 1", "hello there", "what time is it?"):
        page.click("#new-chat")
        send(page, text)
        wait_idle(page)
    items = page.locator("[data-testid=chat-item]")
    page.wait_for_function("document.querySelectorAll('[data-testid=chat-item]').length === 3")
    assert items.first.inner_text().startswith("what time")  # the most recent first

    # rename in place: Enter saves (the server keeps it), Escape cancels
    first_calc = items.filter(has_text="calculate 1 + 1")
    first_calc.hover()
    first_calc.locator("[data-testid=rename-chat]").click()
    page.fill("[data-testid=rename-input]", "Sums & <b>things</b>")
    page.press("[data-testid=rename-input]", "Enter")
    page.wait_for_selector("[data-testid=chat-item] >> text=Sums & <b>things</b>")
    renamed = items.filter(has_text="Sums & <b>things</b>")
    renamed.hover()
    renamed.locator("[data-testid=rename-chat]").click()
    page.fill("[data-testid=rename-input]", "not this")
    page.press("[data-testid=rename-input]", "Escape")
    assert items.filter(has_text="not this").count() == 0
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("[data-testid=chat-item] >> text=Sums & <b>things</b>")
    assert page.locator("[data-testid=chat-item] b").count() == 0  # a title is text

    # pin: the pinned chat goes first and says so, after a reload too; unpin undoes it
    hello = items.filter(has_text="hello there")
    hello.hover()
    hello.locator("[data-testid=pin-chat]").click()
    page.wait_for_function(
        "document.querySelector('[data-testid=chat-item]').textContent.includes('hello there')"
    )
    assert items.first.locator("[data-testid=pinned]").count() == 1
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("[data-testid=chat-item] >> nth=2")
    assert items.first.inner_text().startswith("hello there")
    items.first.hover()
    items.first.locator("[data-testid=pin-chat]").click()
    page.wait_for_function(
        "!document.querySelector('[data-testid=chat-item]').textContent.includes('hello there')"
    )
    assert page.locator("[data-testid=pinned]").count() == 0

    # search: the server matches titles; no match says so; clearing shows all again
    page.fill("#chat-search", "sums")
    page.wait_for_function("document.querySelector('#chat-list').dataset.query === 'sums'")
    assert items.all_inner_texts()[0].startswith("Sums") and items.count() == 1
    page.fill("#chat-search", "zzz-nothing")
    page.wait_for_selector("[data-testid=chat-list-empty]")
    assert items.count() == 0
    page.fill("#chat-search", "")
    page.wait_for_function("document.querySelectorAll('[data-testid=chat-item]').length === 3")

    # delete: confirmed, the chat is gone from the server; the open chat becomes a new one
    page.on("dialog", lambda d: d.accept())
    opened = chat_id(page)
    current = page.locator("[data-testid=chat-item].active")
    current.locator("[data-testid=delete-chat]").click()
    page.wait_for_function("document.querySelectorAll('[data-testid=chat-item]').length === 2")
    assert server.segments(opened) == []
    assert chat_id(page) != opened
    assert page.locator("[data-part=welcome]").is_visible()


def chat_detail(page: Any, chat: str) -> Any:
    return page.evaluate(
        "async (id) => (await fetch('api/sessions/' + encodeURIComponent(id))).json()", chat
    )


# -- (3) the agent switcher -----------------------------------------------------------------


def test_a_server_with_several_agents_offers_a_switcher(pages: Pages, tmp_path: Path) -> None:
    agents = {"alpha": demo_agent(delay=0.01, name="alpha"), "beta": demo_agent(name="beta")}
    with Server(tmp_path / "two.db", agents=agents) as running:
        page = pages.open(running.url)
        switcher = page.locator("[data-part=agent-switcher]")
        assert switcher.is_visible()
        assert switcher.locator("option").all_inner_texts() == ["alpha", "beta"]
        send(page, "hello alpha")
        wait_idle(page)
        first = chat_id(page)
        assert chat_detail(page, first)["agent"] == "alpha"
        switcher.select_option("beta")  # a new chat, with beta
        assert chat_id(page) != first
        send(page, "hello beta")
        wait_idle(page)
        second = chat_id(page)
        assert chat_detail(page, second)["agent"] == "beta"
        page.locator("[data-testid=chat-item]", has_text="hello alpha").locator(
            ".chat-open"
        ).click()
        page.wait_for_function(f"location.hash.includes({json.dumps(first)})")
        # the hash moves first; the switcher follows once the chat's detail has loaded
        page.wait_for_function(
            "document.querySelector('[data-part=agent-switcher]').value === 'alpha'"
        )
        assert switcher.input_value() == "alpha"  # the open chat's agent
        page.reload()  # the pick is remembered
        page.wait_for_selector("body[data-ready=true]")
        page.click("#new-chat")
        assert switcher.input_value() == "beta"


def test_one_agent_shows_its_name_and_no_switcher(pages: Pages, server: Server) -> None:
    page = pages.open(server.url)
    assert page.locator("[data-part=agent-switcher]").is_hidden()
    assert page.locator("#agent-name").inner_text() == "demo"


# -- (4) export and branching ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "needle"),
    [("md", "calculate 6 * 7"), ("json", '"calculate 6 * 7"'), ("txt", "42"), ("html", "<html")],
)
def test_the_chat_exports_in_each_format(
    pages: Pages, server: Server, fmt: str, needle: str
) -> None:
    page = pages.open(server.url)
    assert page.locator("[data-part=export]").is_hidden()  # nothing to export yet
    send(page, "calculate 6 * 7")
    wait_idle(page)
    page.click("[data-part=export] summary")
    with page.expect_download() as info:
        page.click(f"[data-part=export] button[data-format={fmt}]")
    body = Path(info.value.path()).read_text(encoding="utf-8")
    assert needle in body
    if fmt == "json":
        json.loads(body)


def test_branch_in_new_chat_copies_the_chat_up_to_that_answer(pages: Pages, server: Server) -> None:
    page = pages.open(server.url)
    send(page, "calculate 1 + 1")
    wait_idle(page)
    send(page, "calculate 2 + 2")
    wait_idle(page)
    original = chat_id(page)
    page.locator("[data-testid=answer]").first.locator("[data-action=branch]").click()
    page.wait_for_function(f"!location.hash.includes({json.dumps(original)})")
    page.wait_for_selector("[data-testid=answer]")
    assert (
        page.locator("[data-testid=user-message]")
        .all_inner_texts()[0]
        .startswith("calculate 1 + 1")
    )
    assert page.locator("[data-testid=user-message]").count() == 1
    branched = chat_detail(page, chat_id(page))
    assert [e["content"] for e in branched["entries"] if e["role"] == "user"] == ["calculate 1 + 1"]
    # the last answer branches the whole chat; the original is untouched
    page.locator("[data-testid=chat-item]").last.locator(".chat-open").click()
    page.wait_for_function(f"location.hash.includes({json.dumps(original)})")
    page.wait_for_selector("[data-testid=regenerate]")
    page.locator("[data-testid=answer]").last.locator("[data-action=branch]").click()
    page.wait_for_function(f"!location.hash.includes({json.dumps(original)})")
    page.wait_for_function("document.querySelectorAll('[data-testid=user-message]').length === 2")
    users = [e for e in chat_detail(page, original)["entries"] if e["role"] == "user"]
    assert len(users) == 2


# -- (5) themes and languages ---------------------------------------------------------------


def _background(page: Any) -> str:
    return str(page.evaluate("getComputedStyle(document.body).backgroundColor"))


def test_the_theme_toggles_and_is_remembered(pages: Pages, server: Server) -> None:
    page = pages.open(server.url, color_scheme="light")
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    light = _background(page)
    page.click("#theme-toggle")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert _background(page) != light
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.click("#theme-toggle")
    assert _background(page) == light


def test_a_system_in_dark_mode_gets_the_dark_theme(pages: Pages, server: Server) -> None:
    page = pages.open(server.url, color_scheme="dark")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"


def test_the_language_switches_to_chinese_and_is_remembered(pages: Pages, server: Server) -> None:
    page = pages.open(server.url, locale="en-US")
    assert page.inner_text("#new-chat") == "New chat"
    send(page, "calculate 6 * 7")
    wait_idle(page)
    page.click("#lang-toggle")
    assert page.evaluate("document.documentElement.lang") == "zh"
    assert page.inner_text("#new-chat") == "新对话"
    assert page.get_attribute("#input", "placeholder") == "输入消息…"
    page.wait_for_selector("[data-testid=tool-call] .tool-state >> text=完成")
    assert page.inner_text("#lang-toggle") == "English"
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    assert page.inner_text("#send") == "发送"
    page.click("#lang-toggle")
    assert page.inner_text("#send") == "Send"


def test_chat_ui_sets_the_default_language_and_its_own_wording(
    pages: Pages, tmp_path: Path
) -> None:
    ui = ChatUI(default_lang="zh", messages={"en": {"nav.newChat": "Start over"}})
    with Server(tmp_path / "zh.db", ui=ui) as running:
        page = pages.open(running.url, locale="en-US")
        assert page.inner_text("#new-chat") == "新对话"
        assert page.inner_text("[data-part=welcome] h2") == "lovia demo"
        page.click("#lang-toggle")
        assert page.inner_text("#new-chat") == "Start over"


# -- (6) answers: reasoning, Copy, tool cards, activity, a stopped tool ---------------------


def _scripted(*script: Any, **agent: Any) -> Any:
    from lovia.testing import ScriptedProvider

    return Agent("scripted", model=ScriptedProvider(list(script), model="scripted-1"), **agent)


def test_reasoning_is_folded_and_copy_copies_the_markdown(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import text

    agent = _scripted(text("The **answer** is 42.", reasoning="Six times seven, carefully."))
    with Server(tmp_path / "r.db", agents=agent) as running:
        page = pages.open(running.url)
        page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        send(page, "why?")
        wait_idle(page)
        reasoning = page.locator("[data-testid=reasoning]")
        assert reasoning.count() == 1
        assert reasoning.get_attribute("open") is None  # folded once complete
        assert reasoning.locator("pre").is_hidden()
        reasoning.locator("summary").click()
        assert reasoning.locator("pre").inner_text() == "Six times seven, carefully."
        page.click("[data-testid=answer] [data-action=copy]")
        page.wait_for_selector("[data-action=copy] >> text=Copied")
        assert page.evaluate("navigator.clipboard.readText()") == "The **answer** is 42."


def test_several_steps_fold_into_one_activity_line(pages: Pages, tmp_path: Path) -> None:
    from lovia import tool
    from lovia.testing import call, text

    @tool
    def lookup(q: str) -> str:
        """Look q up."""
        return f"found {q}"

    agent = _scripted(
        call("lookup", {"q": "a"}, call_id="c1"),
        call("lookup", {"q": "b"}, call_id="c2"),
        text("Both found."),
        tools=[lookup],
    )
    with Server(tmp_path / "a.db", agents=agent) as running:
        page = pages.open(running.url)
        send(page, "look twice")
        wait_idle(page)
        activity = page.locator("[data-testid=activity]")
        assert activity.count() == 1
        assert activity.locator("summary").first.inner_text() == "2 steps: lookup"
        assert activity.locator("[data-testid=tool-call]").count() == 2
        assert activity.locator("[data-testid=tool-call]").first.is_hidden()  # folded
        activity.locator("summary").first.click()
        assert activity.locator("[data-part=tool][data-tool=lookup][data-status=done]").count() == 2
        assert "Both found." in page.locator("[data-testid=answer]").inner_text()


def test_stopping_a_running_tool_keeps_its_card(pages: Pages, server: Server) -> None:
    page = pages.open(server.url)
    send(page, "wait 5")
    page.wait_for_selector("[data-testid=tool-call] >> text=running…")
    page.click("#stop")
    page.wait_for_selector("#send:not([hidden])")
    page.wait_for_selector("[data-testid=tool-call][data-status=stopped]")  # drawn again
    card = page.locator("[data-testid=tool-call]")
    assert card.count() == 1
    assert card.get_attribute("data-status") == "stopped"
    assert card.locator(".tool-state").inner_text() == "stopped"
    assert page.locator("[data-testid=ended]").inner_text() == "(stopped)"


# -- (7) the model, the context ring, the chat's tokens -------------------------------------


def test_the_model_and_the_context_used_are_shown(pages: Pages, tmp_path: Path) -> None:
    from lovia.context.compaction import Compaction
    from lovia.testing import ScriptedTurn
    from lovia.usage import Usage

    turn = ScriptedTurn(content="Done.", usage=Usage(input_tokens=900, output_tokens=100))
    agent = _scripted(turn, context_policy=Compaction(context_window=1000))
    with Server(tmp_path / "u.db", agents=agent) as running:
        page = pages.open(running.url)
        assert page.inner_text("[data-testid=model-name]") == "scripted-1"
        assert page.locator("[data-part=context-ring]").is_hidden()  # nothing used yet
        send(page, "hi")
        wait_idle(page)
        ring = page.locator("[data-part=context-ring]")
        ring.wait_for(state="visible")
        assert ring.get_attribute("data-used") == "90"
        assert "900 of 1,000 tokens" in (ring.get_attribute("title") or "")
        assert "high" in (ring.get_attribute("class") or "")
        title = page.get_attribute("[data-testid=model-name]", "title") or ""
        assert "1,000 tokens" in title


# -- (8) a second tab follows the chat ------------------------------------------------------


def test_a_second_tab_on_the_same_chat_updates_live(pages: Pages, server: Server) -> None:
    first = pages.open(server.url)
    send(first, "calculate 1 + 1")
    wait_idle(first)
    url = f"{server.url}#chat={chat_id(first)}"
    second = pages.open(url)
    second.wait_for_selector("[data-testid=answer]")
    send(first, "wait 1")
    second.wait_for_selector("#stop:not([hidden])")  # the other tab's run, followed
    second.wait_for_selector("[data-testid=tool-call] >> nth=1")
    wait_idle(first)
    second.wait_for_function("document.querySelectorAll('[data-testid=user-message]').length === 2")
    second.wait_for_selector("#send:not([hidden])")
    second.wait_for_function(
        "[...document.querySelectorAll('[data-testid=answer]')].pop().textContent"
        ".includes('waited 1')"
    )
    # a rename in one tab shows in the other's list
    first.locator("[data-testid=chat-item].active [data-testid=rename-chat]").click()
    first.fill("[data-testid=rename-input]", "Renamed elsewhere")
    first.press("[data-testid=rename-input]", "Enter")
    second.wait_for_selector("[data-testid=chat-item] >> text=Renamed elsewhere")


# -- (9) the token prompt -------------------------------------------------------------------


def test_a_server_with_a_token_asks_for_it(pages: Pages, tmp_path: Path) -> None:
    with Server(tmp_path / "t.db", token="s3cret-token") as running:
        page = pages.open(running.url, ready=False)
        page.wait_for_selector("body[data-needs-token=true]")
        dialog = page.locator("#token-dialog")
        assert dialog.is_visible()
        page.fill("#token-input", "s3cret-token")
        page.click("#token-save")
        page.wait_for_selector("body[data-ready=true]")
        assert "token" not in page.url
        assert page.evaluate("document.cookie") == ""  # HttpOnly: the page cannot read it
        assert page.evaluate("JSON.stringify(localStorage)").find("s3cret") < 0
        send(page, "calculate 6 * 7")
        wait_idle(page)


# -- (10) code highlighting -----------------------------------------------------------------

CODE_ANSWER = (
    "Here:\n\n```python\ndef f(x):\n    return '<b>' + str(x)  # done\n```\n\n"
    "```\nplain <i>text</i>\n```\n\n```nosuchlang\nkept as is\n```\n"
)


def test_fenced_code_is_highlighted_and_stays_text(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import text

    agent = _scripted(text(CODE_ANSWER))
    with Server(tmp_path / "h.db", agents=agent) as running:
        page = pages.open(running.url)
        send(page, "code please")
        wait_idle(page)
        blocks = page.locator("[data-testid=answer] pre > code")
        assert blocks.count() == 3
        python = blocks.nth(0)
        assert python.get_attribute("data-lang") == "python"
        assert python.locator("span.hljs-keyword", has_text="def").count() == 1
        assert python.locator("span.hljs-string").first.inner_text() == "'<b>'"
        assert python.locator("span.hljs-comment").inner_text() == "# done"
        assert python.locator("b").count() == 0  # the string's markup is text
        assert python.inner_text().rstrip("\n") == "def f(x):\n    return '<b>' + str(x)  # done"
        colour = page.evaluate("getComputedStyle(document.querySelector('.hljs-keyword')).color")
        assert colour != page.evaluate("getComputedStyle(document.querySelector('pre')).color")
        for plain in (blocks.nth(1), blocks.nth(2)):  # no language, or one not bundled
            assert plain.locator("span").count() == 0 and plain.get_attribute("data-lang") is None
        assert blocks.nth(1).locator("i").count() == 0


def test_highlighting_cannot_be_handed_markup(pages: Pages, tmp_path: Path) -> None:
    """Raw HTML <pre><code> in an answer, next to a fenced block: the blocks no longer line
    up with the Markdown's, so nothing is highlighted, and nothing the answer wrote runs."""
    from lovia.testing import text

    hostile = (
        '<pre><code class="hljs-keyword" onclick="window.pwned=1">x</code></pre>\n\n'
        '```python\n<img src=x onerror="window.pwned=1">\n```\n'
    )
    agent = _scripted(text(hostile))
    with Server(tmp_path / "x.db", agents=agent) as running:
        page = pages.open(running.url)
        send(page, "go")
        wait_idle(page)
        answer = page.locator("[data-testid=answer]")
        assert answer.locator("img").count() == 0
        assert answer.locator("[onclick]").count() == 0
        assert answer.locator("[class*=hljs-keyword]").count() == 0
        answer.locator("pre").first.click()
        assert page.evaluate("window.pwned") is None


# -- the Content-Security-Policy holds with every feature -----------------------------------


def test_csp_holds_with_every_feature(pages: Pages, server: Server) -> None:
    page = pages.open(server.url, ready=False, bypass_csp=False)
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.reload()
    page.locator("body[data-ready=true]").wait_for()
    policy = page.evaluate("document.querySelector('#lovia-config').type")
    assert policy == "application/json"
    page.locator("[data-testid=example]").nth(1).click()
    page.locator("#input").press("Enter")
    page.locator("[data-testid=regenerate]").wait_for()
    page.locator("#theme-toggle").click()
    page.locator("#lang-toggle").click()
    page.locator("[data-action=copy]").wait_for()
    assert [v for v in violations if "Content Security Policy" in v] == []


# -- follow-up suggestions ------------------------------------------------------------------


def test_follow_up_suggestions_show_as_chips_that_fill_the_composer(
    pages: Pages, tmp_path: Path
) -> None:
    asked: list[int] = []

    async def suggest(request: Any) -> list[str]:
        asked.append(len(request.messages))
        return ["What about 7 * 8?", "<b>bold</b> question"]

    with Server(tmp_path / "f.db", followups=suggest) as running:
        page = pages.open(running.url)
        send(page, "calculate 6 * 7")
        wait_idle(page)
        chips = page.locator("[data-testid=followup]")
        chips.first.wait_for()
        assert chips.all_inner_texts() == ["What about 7 * 8?", "<b>bold</b> question"]
        assert page.locator("[data-part=followups] b").count() == 0
        chips.first.click()
        assert page.input_value("#input") == "What about 7 * 8?"
        assert asked


def test_without_followups_the_page_asks_for_none(pages: Pages, server: Server) -> None:
    page = pages.open(server.url)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    send(page, "calculate 6 * 7")
    wait_idle(page)
    assert not [u for u in requests if u.endswith("/followups")]
    assert page.locator("[data-testid=followup]").count() == 0


# -- the todo panel -------------------------------------------------------------------------


def test_the_todo_panel_shows_the_latest_list(pages: Pages, tmp_path: Path) -> None:
    from lovia import tool
    from lovia.testing import call, text

    @tool
    def todo_write(todos: list[dict[str, str]]) -> str:
        """Replace the todo list."""
        return "ok"

    first = [
        {"content": "Read the files", "status": "completed"},
        {"content": "Write <b>tests</b>", "status": "in_progress"},
        {"content": "Ship", "status": "pending"},
    ]
    agent = _scripted(
        call("todo_write", {"todos": first}, call_id="t1"),
        text("Working on it."),
        tools=[todo_write],
    )
    with Server(tmp_path / "todo.db", agents=agent) as running:
        page = pages.open(running.url)
        panel = page.locator("[data-part=todo-panel]")
        assert panel.is_hidden()
        send(page, "plan it")
        wait_idle(page)
        panel.wait_for()
        items = panel.locator("[data-testid=todo]")
        texts = items.locator(".todo-text").all_inner_texts()
        assert texts == ["Read the files", "Write <b>tests</b>", "Ship"]
        assert items.locator(".todo-mark").all_inner_texts() == ["✓", "▸", "○"]
        assert [items.nth(i).get_attribute("data-status") for i in range(3)] == [
            "completed",
            "in_progress",
            "pending",
        ]
        assert "1 of 3 done" in panel.inner_text()
        page.click("#new-chat")
        assert panel.is_hidden()
        page.locator("[data-testid=chat-item]").first.locator(".chat-open").click()
        panel.wait_for()  # read back from the chat (GET .../todos)
        assert items.count() == 3


# -- ask_human question cards ---------------------------------------------------------------


def test_a_question_from_the_agent_is_answered_on_its_card(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import call, text
    from lovia.tools.human import HumanChannel, ask_human

    channel = HumanChannel()
    question = {
        "question": "Which <i>colour</i>?",
        "options": [{"label": "Red"}, {"label": "Blue", "description": "the calm one"}],
    }
    agent = _scripted(
        call("ask_human", question, call_id="q1"),
        text("Noted."),
        tools=[ask_human(channel)],
    )
    with Server(tmp_path / "q.db", agents=agent, question_channel=channel) as running:
        page = pages.open(running.url)
        send(page, "ask me")
        card = page.locator("[data-testid=question]")
        card.wait_for()
        assert card.locator(".question-text").inner_text() == "Which <i>colour</i>?"
        assert card.locator("i").count() == 0
        options = card.locator("[data-testid=question-option]")
        assert options.all_inner_texts() == ["Red", "Blue"]
        assert page.locator("[data-part=tool][data-status=awaiting]").count() == 1
        options.nth(1).click()
        wait_idle(page)
        tool = page.locator("[data-testid=tool-call]")
        tool.locator("summary").first.click()
        assert tool.locator(".tool-result").inner_text() == "Blue"
        assert "Noted." in page.locator("[data-testid=answer]").inner_text()


# -- components: tables from show_table -----------------------------------------------------


def test_a_table_from_show_table_sorts_and_filters(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import call, text
    from lovia.web.tables import show_table

    table = {
        "title": "Cities",
        "columns": ["city", "people"],
        "rows": [["Oslo", 709000], ["<b>Bern</b>", 134000], ["Paris", 2100000]],
    }
    agent = _scripted(
        call("show_table", table, call_id="tb"), text("Paris is biggest."), tools=[show_table]
    )
    with Server(tmp_path / "tb.db", agents=agent) as running:
        page = pages.open(running.url)
        send(page, "cities")
        wait_idle(page)
        component = page.locator("[data-part=component][data-kind=table]")
        assert component.is_visible()  # drawn under the tool card, not folded
        assert component.locator(".component-title").inner_text() == "Cities"
        rows = component.locator("[data-testid=table-row]")

        def first_column() -> list[str]:
            return [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())]

        assert first_column() == ["Oslo", "<b>Bern</b>", "Paris"]
        assert component.locator("b").count() == 0
        component.locator("[data-testid=table-heading]").nth(1).click()
        assert first_column() == ["<b>Bern</b>", "Oslo", "Paris"]  # by people, ascending
        component.locator("[data-testid=table-heading]").nth(1).click()
        assert first_column() == ["Paris", "Oslo", "<b>Bern</b>"]
        component.locator("[data-testid=table-filter]").fill("os")
        assert first_column() == ["Oslo"]
        page.reload()  # drawn again from the stored chat
        page.wait_for_selector("body[data-ready=true]")
        page.locator("[data-part=component][data-kind=table]").wait_for()


# -- branding: ChatUI styles, scripts, logo, favicon ----------------------------------------


def test_chat_ui_branding_loads_its_styles_scripts_and_logo(pages: Pages, tmp_path: Path) -> None:
    assets = tmp_path / "ui"
    assets.mkdir()
    (assets / "theme.css").write_text('[data-part="new-chat"] { background: rgb(109, 40, 217); }')
    (assets / "hello.js").write_text("document.documentElement.dataset.branded = 'yes';\n")
    (assets / "logo.svg").write_text(
        '<svg xmlns="http://www.w3.org/2000/svg" width="80" height="20">'
        '<rect width="80" height="20" fill="purple"/></svg>'
    )
    ui = ChatUI(
        assets=assets,
        styles=["theme.css"],
        scripts=["hello.js"],
        logo="logo.svg",
        favicon="logo.svg",
    )
    with Server(tmp_path / "b.db", title="Acme", ui=ui) as running:
        page = pages.open(running.url, bypass_csp=False)
        colour = page.evaluate(
            "getComputedStyle(document.querySelector('[data-part=new-chat]')).backgroundColor"
        )
        assert colour == "rgb(109, 40, 217)"
        assert page.evaluate("document.documentElement.dataset.branded") == "yes"
        logo = page.locator("[data-testid=logo]")
        assert logo.get_attribute("alt") == "Acme"
        assert page.evaluate("document.querySelector('[data-testid=logo]').naturalWidth") == 80
        assert page.get_attribute("link[rel=icon]", "href") == "ui/logo.svg"
        assert page.title() == "Acme"
