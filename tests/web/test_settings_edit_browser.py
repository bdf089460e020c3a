"""Settings in Chromium: a model profile edited in place (its key kept when the field is
left empty, extra request fields as a JSON object, a bad one refused on the page)."""

from __future__ import annotations

import json
from pathlib import Path

from .test_browser import Server
from .test_page_browser import Pages, browser, pages
from .test_panels_browser import configured

__all__ = ["browser", "configured", "pages"]  # the fixtures this module uses


def test_a_model_profile_is_edited_and_keeps_its_key(
    pages: Pages, configured: tuple[Server, Path]
) -> None:
    server, path = configured
    path.write_text(
        json.dumps(
            {
                "models": [{"id": "main", "model": "m-1", "api_key": "sk-keep-987654321"}],
                "roles": {"chat": "main"},
            }
        )
    )
    page = pages.open(server.url)
    page.click("#settings-btn")
    dialog = page.locator("[data-testid=settings-dialog]")
    dialog.locator("[data-testid=settings-tab-models]").click()  # it opens on General
    dialog.locator("[data-testid=model-edit]").click()
    form = dialog.locator("[data-testid=model-form]")
    assert form.locator("[data-testid=model-id-input]").input_value() == "m-1"
    assert form.locator("[data-testid=model-key-input]").input_value() == ""  # never sent back
    form.locator("[data-testid=model-id-input]").fill("m-2")
    form.locator("[data-testid=model-extra]").fill("[1, 2]")
    form.locator("[data-testid=model-add]").click()
    page.wait_for_selector("[data-testid=panel-status].error")
    assert json.loads(path.read_text())["models"][0]["model"] == "m-1"  # refused: unchanged
    form.locator("[data-testid=model-extra]").fill('{"reasoning_effort": "low"}')
    form.locator("[data-testid=model-vision]").select_option("on")
    form.locator("[data-testid=model-add]").click()
    page.wait_for_selector("[data-testid=model-profile]:has-text('m-2')")
    (profile,) = json.loads(path.read_text())["models"]
    assert profile["model"] == "m-2" and profile["api_key"] == "sk-keep-987654321"
    assert profile["extra_body"] == {"reasoning_effort": "low"} and profile["vision"] == "on"
    assert "sk-keep-987654321" not in page.content()
