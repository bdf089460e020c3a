"""Attacks through what tools return, opened in Debian's Chromium against a real server: an
image a tool (or an MCP server, which only has to say ``image/...``) declares as SVG in
another spelling, or as HTML, must run nothing on the page's origin when a person opens its
URL (a link in the model's answer can point there); a chart the model draws (show_chart) may
not run script or take the page elsewhere when its title is clicked."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import Agent, tool
from lovia.parts import ImagePart, TextPart
from lovia.testing import ScriptedProvider, call, text
from lovia.web import show_chart

from .test_browser import Server, browser

__all__ = ["browser"]  # the fixture, used by name

SCRIPTED = (
    b'<svg xmlns="http://www.w3.org/2000/svg" onload="document.title=\'PWNED\'">'
    b'<script>document.title="PWNED"</script></svg>'
)
PAGE = b"<!doctype html><title>x</title><script>document.title='PWNED'</script>"
PNG = b"\x89PNG\r\n\x1a\n-not-really"
KINDS = [
    ("image/svg+xml; charset=utf-8", SCRIPTED),
    ("IMAGE/SVG+XML", SCRIPTED),
    ("image/svg+xml", SCRIPTED),
    ("text/html", PAGE),
    ("image/x-unknown", PAGE),
]


@tool(returns_images=True)
async def snap() -> list[Any]:
    """Images of every kind above, in order, then a PNG."""
    parts: list[Any] = [TextPart("shots")]
    for mime, data in [*KINDS, ("image/png", PNG)]:
        parts.append(ImagePart(data=base64.b64encode(data).decode(), mime_type=mime))
    return parts


@pytest.fixture
def served(tmp_path: Path) -> Any:
    turns = [call("snap", {}, call_id="c1"), text("done")]
    agent = Agent("shooter", model=ScriptedProvider(turns), tools=[snap])
    with Server(tmp_path / "media.db", agents={"shooter": agent}) as running:
        body = {"message": "snap", "session_id": "shots"}
        with httpx.Client(base_url=running.url, timeout=30) as client:
            with client.stream("POST", "api/chat/stream", json=body) as streamed:
                assert streamed.status_code == 200
                assert "event: done" in "".join(streamed.iter_text())
        yield running


def test_a_tool_image_that_could_run_script_is_a_download_that_runs_nothing(
    browser: Any, served: Server
) -> None:
    base = f"{served.url}api/sessions/shots/tool-images/c1"
    with httpx.Client(timeout=30) as client:
        for index, (mime, data) in enumerate(KINDS):
            answer = client.get(f"{base}/{index}")
            assert answer.status_code == 200 and answer.content == data
            assert answer.headers["content-disposition"] == "attachment", mime
            assert "sandbox" in answer.headers["content-security-policy"]
            assert answer.headers["x-content-type-options"] == "nosniff"
        png = client.get(f"{base}/{len(KINDS)}")
        assert png.headers["content-type"] == "image/png" and png.content == PNG
        assert "content-disposition" not in png.headers  # a raster image still shows inline
    context = browser.new_context()  # the server's own headers, as a person's browser gets them
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(served.url)
    page.wait_for_selector("body[data-ready=true]")
    for index in range(len(KINDS)):
        try:
            page.goto(f"{base}/{index}")
        except Exception as exc:  # a download aborts the navigation
            assert "Download is starting" in str(exc) or "ERR_ABORTED" in str(exc), exc
        page.wait_for_timeout(200)  # give a script the chance to run; the check is its absence
        assert page.title() != "PWNED", KINDS[index][0]
    context.close()


def _chart(link: str) -> dict[str, Any]:
    title = {"text": "CLICK", "link": link, "target": "self", "left": 0, "top": 0}
    return {
        "title": {**title, "textStyle": {"fontSize": 40}},
        "xAxis": {"type": "category", "data": ["a", "b"]},
        "yAxis": {"type": "value"},
        "series": [{"type": "bar", "data": [1, 2]}],
    }


@pytest.mark.parametrize(
    "link", ["javascript:window.__xss=1", " JavaScript:window.__xss=2", "https://example.org/x"]
)
def test_a_charts_title_link_runs_nothing_and_leaves_the_page_where_it_is(
    browser: Any, tmp_path: Path, link: str
) -> None:
    turns = [call("show_chart", {"option": _chart(link)}, call_id="k1"), text("drawn")]
    agent = Agent("charter", model=ScriptedProvider(turns), tools=[show_chart])
    with Server(tmp_path / "chart.db", agents={"charter": agent}) as served:
        context = browser.new_context(viewport={"width": 1200, "height": 800}, bypass_csp=True)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(served.url)
        page.wait_for_selector("body[data-ready=true]")
        page.fill("#input", "draw")
        page.press("#input", "Enter")
        page.wait_for_selector(".chart-box[data-drawn=true]")
        at = page.url
        box = page.locator(".chart-box").bounding_box()
        assert box is not None
        page.mouse.click(box["x"] + 40, box["y"] + 20)  # on the title's text
        page.wait_for_timeout(500)  # give a handler the chance to run; the check is its absence
        assert page.url == at
        assert page.evaluate("window.__xss ?? null") is None
        assert page.locator(".chart-box[data-drawn=true]").count() == 1  # still this page
        context.close()


def test_model_links_name_no_download_and_no_image_map_area(browser: Any, tmp_path: Path) -> None:
    """A link in the answer that would save this origin's bytes (a tool image, say) under a
    name the text chose, or an image map's area (a link the page does not open in a new
    tab), is not kept as such: the link stays a plain link, the area goes."""
    probe = (
        '<a href="/api/sessions/x/tool-images/c1/0" download="setup.exe">report</a> '
        '<map><area href="#chat=other" shape="rect" coords="0,0,9,9"></map>'
    )
    agent = Agent("echo", model=ScriptedProvider([text(probe)]))
    with Server(tmp_path / "links.db", agents={"echo": agent}) as served:
        context = browser.new_context(bypass_csp=True)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto(served.url)
        page.wait_for_selector("body[data-ready=true]")
        page.fill("#input", "links")
        page.press("#input", "Enter")
        answer = page.locator("[data-testid=answer]", has_text="report")
        answer.wait_for()
        link = answer.locator("a", has_text="report")
        assert link.get_attribute("download") is None
        assert link.get_attribute("target") == "_blank"
        assert answer.locator("area, map").count() == 0
        context.close()
