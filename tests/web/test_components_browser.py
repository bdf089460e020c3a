"""Charts and HTML pages from tools in Chromium (issue 31, stage 2): a chart is drawn by the
vendored ECharts from an option that is data only, a page from ``show_html`` runs in a
sandboxed frame that can reach neither the page nor the network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .test_browser import Server
from .test_page_browser import Pages, _scripted, browser, pages, send, wait_idle

__all__ = ["browser", "pages"]  # the fixtures, used by name

XSS = '<img src=x onerror="window.pwned=1">'


def _chart_agent(option: dict[str, Any]) -> Any:
    from lovia.testing import call, text
    from lovia.web.charts import show_chart

    return _scripted(
        call("show_chart", {"option": option}, call_id="ch"), text("Drawn."), tools=[show_chart]
    )


def test_a_chart_from_show_chart_is_drawn(pages: Pages, tmp_path: Path) -> None:
    option = {
        "title": {"text": "Sales"},
        "dataset": {"source": [["month", "sales"], ["Jan", 120], ["Feb", 132], ["Mar", 101]]},
        "xAxis": {"type": "category"},
        "yAxis": {},
        "series": [{"type": "bar", "name": "sales"}],
    }
    with Server(tmp_path / "c.db", agents=_chart_agent(option)) as running:
        page = pages.open(running.url)
        send(page, "chart it")
        wait_idle(page)
        component = page.locator("[data-part=component][data-kind=chart]")
        component.locator(".chart-box[data-drawn=true]").wait_for()
        canvas = component.locator("canvas")
        assert canvas.count() >= 1
        box = canvas.first.bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 200
        # ECharts describes the chart for screen readers: its title, series and values
        label = component.locator("[aria-label]").first.get_attribute("aria-label") or ""
        assert "Sales" in label and "Jan" in label and "132" in label
        page.screenshot(path=str(tmp_path / "chart.png"))
        page.reload()  # drawn again from the stored chat
        page.wait_for_selector("body[data-ready=true]")
        page.locator("[data-kind=chart] .chart-box[data-drawn=true]").wait_for()


def test_chart_options_are_data_and_their_markup_stays_text(pages: Pages, tmp_path: Path) -> None:
    option = {
        "title": {"text": XSS, "subtext": "<script>window.pwned=2</script>"},
        "tooltip": {"trigger": "item", "formatter": XSS + "{b}"},
        "legend": {"formatter": XSS},
        "toolbox": {"feature": {"dataView": {"show": True}}},
        "graphic": [{"type": "image", "style": {"image": "http://127.0.0.1:9/x.png"}}],
        "xAxis": {"type": "category", "data": [XSS, "<b>two</b>"]},
        "yAxis": {"name": "javascript:alert(1)"},
        "series": [{"type": "bar", "name": XSS, "data": [3, 4], "label": {"show": True}}],
    }
    with Server(tmp_path / "x.db", agents=_chart_agent(option)) as running:
        page = pages.open(running.url)
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        send(page, "chart it")
        wait_idle(page)
        chart = page.locator("[data-kind=chart] .chart-box[data-drawn=true]")
        chart.wait_for()
        box = chart.bounding_box()
        assert box is not None
        for dx in range(40, int(box["width"]) - 40, 40):  # hover over the bars: tooltips
            page.mouse.move(box["x"] + dx, box["y"] + box["height"] * 0.7)
        component = page.locator("[data-part=component][data-kind=chart]")
        assert component.locator("img, script, b, textarea").count() == 0
        assert page.locator("body > div img, body > img").count() == 0
        assert page.evaluate("window.pwned") is None
        assert not [u for u in requests if ":9/" in u]  # the image source was dropped


def _html_agent(html: str, title: str = "Calculator") -> Any:
    from lovia.testing import call, text
    from lovia.web.html import show_html

    return _scripted(
        call("show_html", {"html": html, "title": title}, call_id="h1"),
        text("Here it is."),
        tools=[show_html],
    )


FRAME_PAGE = """<!doctype html><style>body { color: rgb(1, 2, 3); }</style>
<p id="out">not yet</p><button id="add">add</button>
<script>
let n = 40;
document.getElementById("add").onclick = () => { n += 2; out.textContent = "n=" + n; };
const tried = [];
try { parent.document.querySelector("#input").value = "hijacked"; tried.push("dom"); }
catch (e) { tried.push("no-dom"); }
try { window.top.pwned = 1; tried.push("global"); } catch (e) { tried.push("no-global"); }
try { localStorage.setItem("k", "v"); tried.push("storage"); }
catch (e) { tried.push("no-storage"); }
try { document.cookie = "a=b"; tried.push(document.cookie ? "cookie" : "no-cookie"); }
catch (e) { tried.push("no-cookie"); }
fetch("/api/sessions").then(() => tried.push("fetched"), () => tried.push("no-fetch"))
  .finally(() => { out.textContent = "ran " + tried.join(" "); });
parent.postMessage({ html: "<b>x</b>", type: "send", text: "hi" }, "*");
</script>"""


def test_an_html_page_runs_sandboxed_and_cannot_reach_the_page(
    pages: Pages, tmp_path: Path
) -> None:
    with Server(tmp_path / "h.db", agents=_html_agent(FRAME_PAGE)) as running:
        page = pages.open(running.url)
        send(page, "a calculator")
        wait_idle(page)
        component = page.locator("[data-part=component][data-kind=html]")
        assert component.locator(".component-title").inner_text() == "Calculator"
        frame_el = component.locator("iframe")
        assert frame_el.get_attribute("sandbox") == "allow-scripts"
        frame = page.frame_locator("[data-kind=html] iframe")
        out = frame.locator("#out")
        out.filter(has_text="ran").wait_for()
        assert out.inner_text() == "ran no-dom no-global no-storage no-cookie no-fetch"
        frame.locator("#add").click()  # its own script runs: it is interactive
        assert out.inner_text() == "n=42"
        assert page.input_value("#input") == ""
        assert page.evaluate("window.pwned") is None
        assert page.locator("[data-testid=user-message]").count() == 1
        page.screenshot(path=str(tmp_path / "html.png"))


def test_the_frame_document_carries_its_own_policy(tmp_path: Path) -> None:
    import httpx

    with Server(tmp_path / "f.db") as running:
        response = httpx.get(running.url + "frame")
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "sandbox allow-scripts" in policy
    assert "allow-same-origin" not in policy


# -- Mermaid diagrams -----------------------------------------------------------------------

DIAGRAM = "```mermaid\ngraph TD\n  A[Start] --> B{Ready?}\n  B -->|yes| C[Ship it]\n```\n"
HOSTILE_DIAGRAM = (
    "```mermaid\ngraph TD\n"
    '  A["<img src=x onerror=window.pwned=1>"] --> B["<script>window.pwned=2</script>"]\n'
    '  click A callback "tip"\n'
    '  click B href "javascript:window.pwned=3"\n```\n'
)


def test_a_mermaid_block_is_drawn_as_a_diagram(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import text

    agent = _scripted(text("The flow:\n\n" + DIAGRAM + "\nand code:\n\n```\nplain\n```\n"))
    with Server(tmp_path / "m.db", agents=agent) as running:
        page = pages.open(running.url)
        send(page, "draw it")
        wait_idle(page)
        diagram = page.locator("[data-testid=answer] img[data-testid=mermaid]")
        diagram.wait_for()
        page.wait_for_function(
            "document.querySelector('img[data-testid=mermaid]').naturalWidth > 50"
        )
        assert (diagram.get_attribute("src") or "").startswith("data:image/svg+xml")
        assert "Ship it" in (diagram.get_attribute("alt") or "")
        assert page.locator("[data-testid=answer] pre").count() == 1  # the plain block stays
        page.screenshot(path=str(tmp_path / "mermaid.png"))


def test_a_script_in_a_diagram_does_not_run(pages: Pages, tmp_path: Path) -> None:
    from lovia.testing import text

    agent = _scripted(text(HOSTILE_DIAGRAM))
    with Server(tmp_path / "mx.db", agents=agent) as running:
        page = pages.open(running.url)
        send(page, "draw it")
        wait_idle(page)
        answer = page.locator("[data-testid=answer]")
        diagram = answer.locator("img[data-testid=mermaid]")
        diagram.wait_for()  # drawn, its labels as text
        page.wait_for_function(
            "document.querySelector('img[data-testid=mermaid]').naturalWidth > 50"
        )
        diagram.click()
        page.screenshot(path=str(tmp_path / "mermaid-hostile.png"))
        assert (
            answer.locator("script, img:not([data-testid=mermaid]), a[href^=javascript]").count()
            == 0
        )
        assert page.locator("body > div svg script").count() == 0
        assert page.evaluate("window.pwned") is None
