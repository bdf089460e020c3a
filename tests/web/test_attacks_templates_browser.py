"""Attacks on the page's template blocks and views, in Chromium: model output with <style>,
style= and links to ``?view=...`` on a page whose extension scripts loosen ``style-src``;
crafted ``?view=`` URLs; the page's policy with and without extension scripts."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx

from lovia.testing import text
from lovia.web import ChatUI

from .test_browser import Server
from .test_page_browser import Pages, _scripted, browser, pages, send, wait_idle
from .test_views_browser import _ui

__all__ = ["browser", "pages"]  # the fixtures, used by name

HOSTILE = (
    "<style>body{background:rgb(1, 2, 3)}</style>"
    '<b id="styled" style="color: rgb(4, 5, 6)">bold</b> '
    '<a id="raw-view" href="?view=dash/x">raw</a> [md](?view=dash) '
    '<a href="?view=javascript:window.__xss=1">js</a>'
)


def test_model_output_gets_no_style_and_opens_no_view_in_place(
    pages: Pages, tmp_path: Path
) -> None:
    agent = _scripted(text(HOSTILE))
    with Server(tmp_path / "s.db", agents=agent, ui=_ui(tmp_path)) as running:
        policy = httpx.get(running.url, timeout=30).headers["content-security-policy"]
        assert "style-src 'self' 'unsafe-inline'" in policy  # the loosened page
        assert (
            "script-src 'self' 'sha256-" in policy
            and "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]
        )
        page = pages.open(running.url)
        send(page, "hi")
        wait_idle(page)
        answer = page.locator("[data-testid=answer]").last
        assert answer.locator("style").count() == 0
        assert answer.locator("[style]").count() == 0
        body_bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert body_bg != "rgb(1, 2, 3)"
        for link in answer.locator("a").all():
            href = link.get_attribute("href")
            if href is not None:
                link.click()
        page.wait_for_timeout(300)  # any handler's chance to run; the check is its absence
        assert page.evaluate("window.__xss") is None
        # a message's link opens in a new tab (a view there, with its path as text), never
        # off the server
        assert all(p.url.startswith(running.url) for p in page.context.pages)
        # a link in a message never opens a view in place over the chat
        for p in page.context.pages:
            assert p.locator("#dash-body").count() == 0 or p is not page


def test_crafted_view_urls_run_nothing_and_go_nowhere(pages: Pages, tmp_path: Path) -> None:
    with Server(tmp_path / "v.db", agents=_scripted(text("x")), ui=_ui(tmp_path)) as running:
        for target in (
            "<img src=x onerror=window.__xss=1>",
            "javascript:window.__xss=2",
            "//evil.example/",
            "dash/<img src=x onerror=window.__xss=3>",
            "dash/../../%2e%2e/evil",
        ):
            page = pages.open(running.url + "?view=" + quote(target, safe=""))
            page.wait_for_timeout(200)
            assert page.evaluate("window.__xss") is None
            assert page.url.startswith(running.url), page.url
            if target.startswith("dash/"):
                shown = page.locator("#dash-body").text_content() or ""
                assert "<IMG" in shown or "EVIL" in shown  # the path, as text
            page.context.close()
            pages.contexts.remove(page.context)


def test_a_page_without_extension_scripts_keeps_the_strict_policy(tmp_path: Path) -> None:
    ui = ChatUI(empty_title="</script><script>window.__xss=1</script>")
    agent = _scripted(text("x"))
    with Server(tmp_path / "p.db", agents=agent, ui=ui, title="</title><b>t</b>") as s:
        response = httpx.get(s.url, timeout=30)
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "style-src 'self';" in policy
    assert "<b>t</b>" not in response.text and "<script>window" not in response.text
