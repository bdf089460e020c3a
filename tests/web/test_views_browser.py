"""Template blocks, views, the page's wording in Chinese and model-made titles, in Chromium
(issue 31): an ``index.html`` in ``ChatUI(assets=...)`` extends the bundled page and fills
its blocks; ``window.lovia.registerView`` draws a page of its own in place of the chat; the
approval card reads in the user's language; a title model's answer names the chat in the
list. Screenshots go to the test's ``tmp_path``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from lovia.web import ChatUI

from .test_browser import Server
from .test_page_browser import Pages, _scripted, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures, used by name

TEMPLATE = """{% extends "lovia/index.html" %}
{% block head %}
<script type="importmap">
{"imports": {"acme-lib": "{{ url_for('ui-assets', path='lib.js').path }}"}}
</script>
{% endblock %}
{% block sidebar_nav %}<a id="acme-dash" href="?view=dash">Dashboard</a>{% endblock %}
{% block topbar_actions %}
<span id="acme-status" data-i18n="acme.status">All good</span>
{% endblock %}
{% block welcome %}{{ super() }}<p id="acme-notice">Demo data only.</p>{% endblock %}
{% block composer_actions %}<button type="button" id="acme-chip">Summarize</button>{% endblock %}
{% block sidebar_footer %}<div id="acme-user">Signed in as Ada</div>{% endblock %}
{% block body_end %}
<script type="module" src="{{ url_for('ui-assets', path='end.js').path }}"></script>
{% endblock %}
"""

EXTENSION = """
import { shout } from "acme-lib";
const { lovia } = window;
window.views = [];
window.cleaned = 0;
lovia.on("view", (e) => window.views.push(e.view));
lovia.registerView("dash", {
  title: lovia.t("acme.dash"),
  render(el, ctx) {
    const h = document.createElement("h3");
    h.id = "dash-body";
    h.textContent = shout(`dashboard ${ctx.path || "home"}`);
    const link = document.createElement("a");
    link.id = "dash-sub";
    link.href = "?view=dash/orders";
    link.textContent = "orders";
    el.append(h, link);
    return () => { window.cleaned += 1; };
  },
});
lovia.registerView("broken", { render() { throw new Error("no data"); } });
document.getElementById("acme-chip").addEventListener("click", () => lovia.setDraft("Summarize"));
window.acmeReady = true;
"""


PUBLIC_PARTS = (
    "sidebar", "sidebar-header", "agent-switcher", "sidebar-nav", "new-chat", "memory",
    "schedules", "settings", "sessions-label", "sessions-search", "sessions", "sidebar-footer",
    "topbar", "chat-title", "topbar-actions", "export", "view", "transcript", "welcome",
    "todo-panel", "composer", "attach", "context-ring",
)  # fmt: skip


def _assets(tmp_path: Path) -> Path:
    folder = tmp_path / "ui"
    folder.mkdir()
    (folder / "index.html").write_text(TEMPLATE, encoding="utf-8")
    (folder / "ext.js").write_text(EXTENSION, encoding="utf-8")
    (folder / "lib.js").write_text("export const shout = (s) => s.toUpperCase();", encoding="utf-8")
    (folder / "end.js").write_text("window.endRan = true;", encoding="utf-8")
    return folder


def _ui(tmp_path: Path) -> ChatUI:
    return ChatUI(
        assets=_assets(tmp_path),
        scripts=["ext.js"],
        empty_title="Acme",
        messages={
            "en": {"acme.status": "All systems normal", "acme.dash": "Dashboard"},
            "zh": {"acme.status": "一切正常", "acme.dash": "仪表盘"},
        },
    )


def test_a_template_fills_the_pages_blocks_under_its_strict_policy(
    pages: Pages, tmp_path: Path
) -> None:
    from lovia.testing import text

    with Server(tmp_path / "t.db", agents=_scripted(text("hi")), ui=_ui(tmp_path)) as running:
        response = httpx.get(running.url, timeout=30)
        policy = response.headers["content-security-policy"]
        # the template's inline import map is allowed by its hash, and nothing else inline
        scripts = next(d for d in policy.split("; ") if d.startswith("script-src"))
        assert scripts.startswith("script-src 'self' 'sha256-") and "unsafe" not in scripts
        assert "{%" not in response.text
        for part in PUBLIC_PARTS:  # the regions a stylesheet may target (docs: Branding)
            assert f'data-part="{part}"' in response.text, part
        for raw in ("static/index.html", "ui/index.html"):
            assert httpx.get(running.url + raw, timeout=30).status_code == 404
        page = pages.open(running.url, bypass_csp=False)  # the real policy, import map and all
        assert page.locator("[data-part=sidebar-nav] #acme-dash").is_visible()
        assert page.locator("[data-part=topbar-actions] #acme-status").inner_text() == (
            "All systems normal"
        )
        welcome = page.locator("[data-part=welcome]")
        assert welcome.locator("h2").inner_text() == "Acme"  # super() kept the default
        assert welcome.locator("#acme-notice").is_visible()
        assert page.locator("[data-part=sidebar-footer] #acme-user").is_visible()
        assert page.evaluate("window.endRan") is True
        page.wait_for_function("window.acmeReady === true")  # the extension module has run
        page.click("#acme-chip")
        assert page.input_value("#input") == "Summarize"
        page.screenshot(path=str(tmp_path / "blocks.png"))
        page.click("#lang-toggle")
        assert page.locator("#acme-status").inner_text() == "一切正常"


def test_a_view_covers_the_chat_and_follows_the_url(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import text

    agent = _scripted(text("hello there, see [the dashboard](?view=dash)"))
    with Server(tmp_path / "v.db", agents=agent, ui=_ui(tmp_path)) as running:
        page = pages.open(running.url)
        send(page, "hi")
        wait_idle(page)
        # a link in model output never drives this tab: it opens apart, the chat stays
        with page.expect_popup() as popup:
            page.locator("#messages a", has_text="the dashboard").click()
        popup.value.close()
        assert page.locator("#view").is_hidden() and "view=" not in page.url
        chat = page.evaluate("lovia.state.sessionId")
        page.click("#acme-dash")
        page.wait_for_selector("#dash-body")
        assert page.locator("#dash-body").inner_text() == "DASHBOARD HOME"
        assert page.locator("#messages").is_hidden() and page.locator("#composer").is_hidden()
        assert page.locator("#view-title").inner_text() == "Dashboard"
        assert page.get_attribute("#acme-dash", "aria-current") == "page"
        assert "view=dash" in page.url
        state = page.evaluate("({ ...lovia.state })")
        assert state["view"] == "dash" and state["sessionId"] == chat  # the chat stays current
        page.screenshot(path=str(tmp_path / "view.png"))
        page.click("#dash-sub")  # a link to a path of the view redraws it
        page.wait_for_selector("#dash-body >> text=DASHBOARD ORDERS")
        assert page.evaluate("window.cleaned") == 1
        assert page.get_attribute("#acme-dash", "aria-current") == "page"  # compared by id
        page.go_back()
        page.wait_for_selector("#dash-body >> text=DASHBOARD HOME")
        page.locator("[data-testid=chat-item]").first.locator(".chat-open").click()
        page.wait_for_selector("#messages >> text=hello there")
        assert page.locator("#view").is_hidden() and page.locator("#composer").is_visible()
        assert "view=" not in page.url
        assert page.evaluate("window.views") == ["dash", "dash/orders", "dash", None]
        # the URL opens the view at start; a view that throws shows a notice in its place
        fresh = pages.open(running.url + "?view=dash/orders")
        assert fresh.locator("#dash-body").inner_text() == "DASHBOARD ORDERS"
        fresh.evaluate("lovia.openView('broken')")
        fresh.wait_for_selector("[data-testid=view-error] >> text=no data")
        fresh.evaluate("lovia.closeView()")
        assert fresh.locator("#view").is_hidden()
        unknown = pages.open(running.url + "?view=nowhere")
        unknown.wait_for_selector("[data-testid=toast] >> text=nowhere")
        assert unknown.locator("#view").is_hidden()
        failures = unknown.evaluate(
            """() => ["Bad id", "lovia-x"].map((id) => {
                try { lovia.registerView(id, { render() {} }); return "registered"; }
                catch (e) { return e.constructor.name; }
            })"""
        )
        assert failures == ["TypeError", "TypeError"]


def test_an_unregistered_view_brings_back_the_one_it_replaced(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import text

    with Server(tmp_path / "u.db", agents=_scripted(text("x")), ui=_ui(tmp_path)) as running:
        page = pages.open(running.url + "?view=dash")
        page.wait_for_selector("#dash-body")
        page.evaluate(
            """() => { window.undo = lovia.registerView("dash", { title: "Second",
                render(el) { el.textContent = "second"; } }); }"""
        )
        page.wait_for_selector("#view >> text=second")
        assert page.locator("#view-title").inner_text() == "Second"
        page.evaluate("window.undo()")
        page.wait_for_selector("#dash-body")
        assert page.locator("#view-title").inner_text() == "Dashboard"


def test_the_approval_card_reads_in_chinese_and_a_view_says_the_chat_waits(
    pages: Pages, tmp_path: Path, monkeypatch: Any
) -> None:
    from .apps import paying

    monkeypatch.setenv("LOVIA_TEST_PAID", str(tmp_path / "paid.txt"))
    with Server(tmp_path / "a.db", agents=paying, ui=ChatUI(default_lang="zh")) as running:
        page = pages.open(running.url)
        # sent from an open view: the chat underneath gets it, and the page says it waits
        page.evaluate(
            """() => { lovia.registerView("side", { render(el) { el.textContent = "side"; } });
                lovia.openView("side"); lovia.send("pay bob"); }"""
        )
        page.wait_for_selector("[data-testid=toast] >> text=对话在等你回应")
        page.evaluate("lovia.closeView()")
        card = page.locator("[data-testid=approval]")
        card.wait_for()
        assert card.locator("[data-testid=approve]").inner_text() == "批准"
        assert card.locator("[data-testid=reject]").inner_text() == "拒绝"
        reason = card.locator("[data-testid=approval-reason]")
        assert "理由" in (reason.get_attribute("placeholder") or "")
        assert page.locator("[data-testid=stop-pending]").inner_text() == "停止（全部拒绝）"
        assert "批准" in page.locator("[data-testid=pending] .pending-what").inner_text()
        page.screenshot(path=str(tmp_path / "approval-zh.png"))
        page.click("[data-testid=stop-pending]")
        page.locator("[data-testid=ended]").wait_for()


def test_a_title_model_names_the_chat_in_the_list(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import ScriptedProvider, text

    namer = ScriptedProvider([text('"Otter facts for beginners."')], model="namer-1")
    agent = _scripted(text("Otters hold hands while they sleep."))
    with Server(tmp_path / "n.db", agents=agent, titles=True, title_model=namer) as running:
        page = pages.open(running.url)
        send(page, "tell me about otters, please, in some detail")
        wait_idle(page)
        # the model's answer, cleaned (no quotes, no final period), replaces the first message
        item = page.locator("[data-testid=chat-item]", has_text="Otter facts for beginners")
        item.wait_for()
        assert page.locator("[data-testid=chat-item]").count() == 1
        page.locator("#chat-title", has_text="Otter facts for beginners").wait_for()
        reloaded = pages.open(running.url + page.url.split("/", 3)[3])
        reloaded.locator("[data-testid=chat-item]", has_text="Otter facts for beginners").wait_for()


WRAPPER = """
const builtin = window.lovia.getRenderer("table");
window.builtinAtLoad = Boolean(builtin && builtin.render);
window.lovia.registerRenderer("table", {
  render(el, props, ctx) {
    const note = document.createElement("p");
    note.className = "own-table";
    note.textContent = `${props.rows.length} rows`;
    el.append(note);
    return builtin.render(el, props, ctx);  // the built-in table, under a line of its own
  },
});
window.lovia.registerToolView("lookup", {
  render(el, tool) {
    if (tool.status !== "done") return;
    const b = document.createElement("strong");
    b.className = "lookup-view";
    b.textContent = tool.result.toUpperCase();
    el.replaceChildren(b);
  },
});
"""


def test_an_extension_wraps_a_built_in_renderer_and_its_tool_view_shows_open(
    pages: Pages, tmp_path: Path
) -> None:
    """0.9.119's example 31 wraps the built-in table (getRenderer while its script loads);
    example 33's tool view is the card's payload, shown open, the raw result behind Source."""
    from lovia import tool
    from lovia.testing import call, text
    from lovia.web import ui_result

    @tool
    def rows() -> str:
        """Some rows."""
        return ui_result("table", {"columns": ["a"], "rows": [[1], [2]]})

    @tool
    def lookup(q: str) -> str:
        """Look q up."""
        return f"found {q}"

    folder = tmp_path / "ui"
    folder.mkdir()
    (folder / "wrap.js").write_text(WRAPPER, encoding="utf-8")
    agent = _scripted(
        call("rows", {}, call_id="r1"),
        call("lookup", {"q": "otters"}, call_id="l1"),
        text("Done."),
        tools=[rows, lookup],
    )
    ui = ChatUI(assets=folder, scripts=["wrap.js"])
    with Server(tmp_path / "w.db", agents=agent, ui=ui) as running:
        page = pages.open(running.url)
        assert page.evaluate("window.builtinAtLoad") is True
        send(page, "go")
        wait_idle(page)
        component = page.locator("[data-testid=component][data-kind=table]")
        assert component.locator(".own-table").inner_text() == "2 rows"
        assert component.locator("table").count() == 1  # the built-in drew below it
        card = page.locator("[data-part=tool][data-tool=lookup]")
        assert card.get_attribute("open") is not None
        assert card.locator(".lookup-view").inner_text() == "FOUND OTTERS"
        assert card.locator(".tool-result").is_hidden()
        card.locator("[data-testid=tool-source]").click()
        assert card.locator(".tool-result").inner_text() == "found otters"
        page.screenshot(path=str(tmp_path / "wrapped.png"))


def test_a_template_may_replace_the_title_and_the_welcome_outright(
    pages: Pages, tmp_path: Path
) -> None:
    from lovia.testing import text

    folder = tmp_path / "ui"
    folder.mkdir()
    (folder / "index.html").write_text(
        '{% extends "lovia/index.html" %}\n'
        '{% block sidebar_header %}<strong id="brand">Acme</strong>{% endblock %}\n'
        '{% block welcome %}<p id="own-welcome">Ask Acme.</p>{% endblock %}\n',
        encoding="utf-8",
    )
    ui = ChatUI(assets=folder, logo="/logo.svg", empty_title="unused")
    with Server(tmp_path / "r.db", agents=_scripted(text("hi")), ui=ui) as running:
        page = pages.open(running.url)  # the page starts without #page-title or #welcome-title
        assert page.locator("[data-part=sidebar-header] #brand").inner_text() == "Acme"
        assert page.locator("#page-title").count() == 0
        assert page.locator("[data-part=welcome] #own-welcome").is_visible()
        send(page, "hello")
        wait_idle(page)
        assert page.locator("#own-welcome").is_hidden()
