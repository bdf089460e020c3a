"""The extension API, ``window.lovia``, in Chromium (issue 31, stage 2): a ``ChatUI(scripts=
...)`` module registers a tool view, a renderer for a kind of its own and a context provider,
and listens to the page's events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lovia.web import ChatUI

from .test_browser import Server
from .test_page_browser import Pages, _scripted, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures, used by name

EXTENSION = """
const { lovia } = window;
window.seen = [];
lovia.on("session", (e) => window.seen.push("session:" + (e.sessionId === null ? "new" : "chat")));
lovia.on("run-start", () => window.seen.push("run-start"));
lovia.on("run-end", (e) => window.seen.push("run-end:" + e.status));
lovia.on("run-end", () => { throw new Error("a listener that throws stops no other"); });
lovia.on("theme", (e) => window.seen.push("theme:" + e.theme));
const off = lovia.on("run-start", () => window.seen.push("never"));
off();
lovia.registerToolView("lookup", {
  summary: (tool) => tool.status === "done" ? `Looked up “${tool.args.q}”` : "Looking up…",
  render(el, tool) {
    if (tool.status !== "done") return;
    const b = document.createElement("strong");
    b.className = "lookup-view";
    b.textContent = tool.result.toUpperCase();
    el.replaceChildren(b);
  },
});
lovia.registerRenderer("kpis", {
  render(el, props, ctx) {
    for (const item of props.items) {
      const card = document.createElement("div");
      card.className = "kpi";
      card.textContent = `${item.label}: ${item.value} (${ctx.theme})`;
      el.append(card);
    }
  },
});
const undo = lovia.provideContext("kb", () => "wrong");
lovia.provideContext("kb", () => document.documentElement.dataset.kb || "handbook");
undo();
lovia.ready.then(() => { window.readyWith = JSON.stringify(lovia.state); });
"""


def test_an_extension_adds_a_tool_view_a_renderer_context_and_hooks(
    pages: Pages, tmp_path: Path
) -> None:
    from lovia import tool
    from lovia.testing import call, text
    from lovia.web import ui_result

    @tool
    def lookup(q: str) -> str:
        """Look q up."""
        return f"found {q}"

    @tool
    def kpis() -> str:
        """Key figures."""
        return ui_result("kpis", {"items": [{"label": "<b>Users</b>", "value": 7}]})

    agent = _scripted(
        call("lookup", {"q": "otters"}, call_id="c1"),
        text("Otters found."),
        call("kpis", {}, call_id="k1"),
        text("Figures shown."),
        tools=[lookup, kpis],
    )
    contexts: list[dict[str, Any]] = []

    def run_deps(trigger: Any) -> None:
        contexts.append(dict(trigger.client_context))

    assets = tmp_path / "ui"
    assets.mkdir()
    (assets / "ext.js").write_text(EXTENSION)
    ui = ChatUI(assets=assets, scripts=["ext.js"])
    with Server(tmp_path / "e.db", agents=agent, ui=ui, run_deps=run_deps) as running:
        page = pages.open(running.url, bypass_csp=False)  # the extension runs under the CSP
        page.wait_for_function("window.readyWith !== undefined")
        ready = json.loads(page.evaluate("window.readyWith"))
        assert ready["sessionId"] is not None and ready["busy"] is False
        assert page.evaluate("typeof window.lovia.version") == "string"
        assert page.evaluate("Object.isFrozen(window.lovia)") is True

        send(page, "find otters")
        wait_idle(page)
        card = page.locator("[data-part=tool][data-tool=lookup]")
        assert card.locator(".tool-name").inner_text() == "Looked up “otters”"
        assert card.locator(".tool-name").get_attribute("title") == 'lookup({"q": "otters"})'
        assert card.get_attribute("open") is not None  # what the view drew shows unfolded
        assert card.locator("[data-part=tool-view] .lookup-view").inner_text() == "FOUND OTTERS"
        assert contexts == [{"kb": "handbook"}]  # the provider that was undone is gone

        page.evaluate("document.documentElement.dataset.kb = 'wiki'")
        send(page, "figures")
        wait_idle(page)
        kpi = page.locator("[data-part=component][data-kind=kpis] .kpi")
        assert kpi.inner_text() == "<b>Users</b>: 7 (light)"
        assert contexts[-1] == {"kb": "wiki"}  # read at send time

        page.click("#theme-toggle")
        seen = page.evaluate("window.seen")
        assert seen == [
            "session:new",
            "run-start",
            "run-end:done",
            "run-start",
            "run-end:done",
            "theme:dark",
        ]


ACTIONS = """
const { lovia } = window;
const ratings = new Map();
lovia.registerMessageAction("rate-up", {
  label: "Good answer",
  icon: "👍",
  when: (msg) => msg.role === "assistant" && msg.ref !== null,
  pressed: (msg) => ratings.get(msg.ref) === "up",
  async run(msg) {
    ratings.set(msg.ref, "up");
    window.rated = JSON.stringify(msg);
    lovia.refreshMessageActions();
  },
});
lovia.registerMessageAction("broken", {
  label: "Fails",
  run() { throw new Error("Could not save the rating"); },
});
"""


def test_an_extension_adds_message_actions(pages: Pages, tmp_path: Path) -> None:
    assets = tmp_path / "ui"
    assets.mkdir()
    (assets / "actions.js").write_text(ACTIONS)
    ui = ChatUI(assets=assets, scripts=["actions.js"])
    with Server(tmp_path / "a.db", ui=ui) as running:
        page = pages.open(running.url)
        send(page, "calculate 6 * 7")
        wait_idle(page)
        rate = page.locator("[data-testid=answer] [data-action=rate-up]")
        assert rate.inner_text() == "👍" and rate.get_attribute("aria-label") == "Good answer"
        assert rate.get_attribute("aria-pressed") == "false"
        rate.click()
        page.wait_for_selector("[data-action=rate-up][aria-pressed=true]")
        msg = json.loads(page.evaluate("window.rated"))
        assert msg["role"] == "assistant" and msg["ref"] and "42" in msg["text"]
        page.click("[data-testid=answer] [data-action=broken]")
        page.wait_for_selector("[data-testid=toast] >> text=Could not save the rating")
