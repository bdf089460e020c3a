"""The answer that ended a run says, in a small footer, when it ended, how long the run took
and the tokens it used (issue 31: "the page never names the model or what a run cost"), as
0.9.119's page does; the same after a reload, and in the page's language."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, ScriptedTurn, call
from lovia.usage import Usage

from .test_browser import Server
from .test_page_browser import Pages, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures this module uses

PROBE = "<img src=x onerror=alert(1)>"


# Every run footer with tokens the page shows, in order, including those it has already
# taken away again by the time its observer runs.
WATCH = """() => {
  window.footersSeen = [];
  const note = (root) => {
    if (!(root instanceof Element)) return;
    for (const n of root.querySelectorAll('[data-testid=run-footer]')) {
      if (n.querySelector('[data-testid=run-tokens]') && !window.footersSeen.includes(n)) {
        window.footersSeen.push(n);
      }
    }
  };
  new MutationObserver((records) => {
    for (const r of records) [...r.removedNodes].forEach(note);
    note(document.body);
  }).observe(document.body, { childList: true, subtree: true });
}"""


def _answer(content: str, input_tokens: int, output_tokens: int) -> Any:
    return ScriptedTurn(content=content, usage=Usage(input_tokens, output_tokens))


def _footer(page: Any, n: int) -> dict[str, Any]:
    footer = page.locator("[data-testid=answer]").nth(n).locator("[data-testid=run-footer]")
    return {
        "time": footer.locator("[data-testid=run-time]").inner_text(),
        "duration": footer.locator("[data-testid=run-duration]").inner_text(),
        "tokens": footer.locator("[data-testid=run-tokens]").inner_text(),
        "split": footer.locator("[data-testid=run-tokens]").get_attribute("title"),
        "elements": footer.evaluate("(n) => n.querySelectorAll('*').length"),
    }


def _wait_tokens(page: Any, n: int) -> None:
    page.wait_for_function(f"document.querySelectorAll('[data-testid=run-tokens]').length === {n}")


def test_an_answer_shows_its_time_duration_and_tokens_live_and_after_a_reload(
    pages: Pages, tmp_path: Path
) -> None:
    @tool
    async def look() -> str:
        """Look."""
        return "seen"

    script = [call("look", {}), _answer(f"Found it {PROBE}", 1200, 34), _answer("Again.", 5, 7)]
    agent = Agent(name="bot", model=ScriptedProvider(script), tools=[look])
    with Server(tmp_path / "lovia.db", agents=agent) as running:
        page = pages.open(running.url, locale="en-US")
        page.evaluate(WATCH)
        send(page, "find it")
        wait_idle(page)
        page.locator("[data-testid=answer]").last.hover()
        page.screenshot(path=str(tmp_path / "footer.png"))
        first = _footer(page, 0)
        assert re.fullmatch(r"\d{1,2}:\d{2}(\s[AP]M)?", first["time"]), first
        assert re.fullmatch(r"(<0\.1|\d+\.\d)s", first["duration"]), first
        # the run's two model calls: 1 + 1 tokens for the tool call, 1200 + 34 for the answer
        assert first["tokens"] == "1,236 tokens"
        assert first["split"] == "1,201 in · 35 out"
        assert first["elements"] == 3  # three spans of text: nothing from the server as HTML
        # the stream's own timing and done drew the footer first, on the live answer (which
        # the stored chat's drawing then replaced), and it read as it does now
        live = page.evaluate("window.footersSeen.map((n) => [n.isConnected, n.textContent])")
        assert live[0][0] is False, live
        shown = page.locator("[data-testid=run-footer]").first.text_content()
        assert live[0][1] == shown
        send(page, "again")
        _wait_tokens(page, 2)
        wait_idle(page)
        second = _footer(page, 1)
        assert second["tokens"] == "12 tokens" and second["split"] == "5 in · 7 out"
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        _wait_tokens(page, 2)
        assert [_footer(page, 0), _footer(page, 1)] == [first, second]
        # in Chinese, the same figures in its words
        page.evaluate("localStorage.setItem('lovia.lang', 'zh')")
        page.reload()
        page.wait_for_selector("body[data-ready=true]")
        _wait_tokens(page, 2)
        zh = _footer(page, 0)
        assert zh["tokens"] == "1,236 个 token" and zh["duration"].endswith("秒"), zh
        page.locator("[data-testid=answer]").first.hover()
        page.screenshot(path=str(tmp_path / "footer-zh.png"))
        pages.close()
