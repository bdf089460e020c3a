"""Settings in Chromium: a model profile edited in place (its key kept when the field is
left empty, extra request fields as a JSON object, a bad one refused on the page)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .test_browser import Server
from .test_page_browser import Pages, browser, pages, send
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


class ModelList:
    """An OpenAI-compatible endpoint on 127.0.0.1 that lists one model and records the
    Authorization header of each request."""

    def __init__(self) -> None:
        self.auth: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.auth.append(self.headers.get("Authorization"))
                body = json.dumps({"object": "list", "data": [{"id": "m-1"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def test_test_connection_asks_the_endpoint_with_the_stored_key_and_saves_nothing(
    pages: Pages, configured: tuple[Server, Path]
) -> None:
    """0.9.119's model form has Test connection: a real request, nothing saved. An edited
    profile is tested with its stored key; the answer is said on the page as text."""
    server, path = configured
    endpoint = ModelList()
    try:
        doc = {
            "models": [{"id": "main", "model": "m-1", "base_url": endpoint.url,
                        "api_key": "sk-keep-987654321"}],
            "roles": {"chat": "main"},
        }  # fmt: skip
        path.write_text(json.dumps(doc))
        before = path.read_text()
        page = pages.open(server.url)
        page.click("#settings-btn")
        dialog = page.locator("[data-testid=settings-dialog]")
        dialog.locator("[data-testid=settings-tab-models]").click()
        dialog.locator("[data-testid=model-edit]").click()
        form = dialog.locator("[data-testid=model-form]")
        form.locator("[data-testid=model-test]").click()
        result = form.locator("[data-testid=model-test-result]")
        page.wait_for_function(
            "document.querySelector('[data-testid=model-test-result]').innerText"
            ".startsWith('Connected')"
        )
        assert "1 models" in result.inner_text()
        assert endpoint.auth == ["Bearer sk-keep-987654321"]  # the key never left the server
        # a model the endpoint does not list is noted; an address nothing answers is said
        form.locator("[data-testid=model-id-input]").fill("m-other")
        form.locator("[data-testid=model-test]").click()
        page.wait_for_function(
            "document.querySelector('[data-testid=model-test-result]').innerText"
            ".includes('m-other')"
        )
        form.locator("[data-testid=model-base-input]").fill("http://127.0.0.1:9/v1")
        form.locator("[data-testid=model-test]").click()
        page.wait_for_function(
            "document.querySelector('[data-testid=model-test-result]').innerText"
            ".startsWith('Unreachable')"
        )
        assert "warn" in (result.get_attribute("class") or "")
        assert path.read_text() == before  # a test saves nothing
    finally:
        endpoint.close()


def test_without_a_model_the_setup_notice_opens_settings_and_the_page_starts_over(
    pages: Pages, tmp_path: Path
) -> None:
    """As 0.9.119's first launch ("Configure a model"): a server that edits its config.json
    and has no model yet offers Settings → Models from the setup notice; once a model is
    saved, the page serves it without a restart."""
    from lovia import Agent
    from lovia.testing import ScriptedProvider, text
    from lovia.web.api_config import ConfigFile

    def rebuild(doc: dict[str, Any]) -> Agent | None:
        if not doc.get("models"):
            return None
        return Agent(name="lovia", model=ScriptedProvider([text("hello from the model")] * 3))

    path = tmp_path / "config.json"
    runtime = ConfigFile(path=path, agent_name="lovia", rebuild=rebuild)
    with Server(tmp_path / "lovia.db", agents={}, config_runtime=runtime) as server:
        page = pages.open(server.url)
        page.locator("[data-testid=setup-hint]").wait_for()
        assert page.locator("#input").is_disabled()
        page.locator("[data-testid=setup-configure]").click()
        dialog = page.locator("[data-testid=settings-dialog]")
        form = dialog.locator("[data-testid=model-form]")
        form.locator("[data-testid=model-id-input]").fill("openai:m-1")
        form.locator("[data-testid=model-key-input]").fill("sk-first-1234")
        form.locator("[data-testid=model-add]").click()
        page.wait_for_function("!document.querySelector('[data-testid=setup-hint]')")
        page.wait_for_selector("body[data-ready=true]")
        assert page.locator("#input").is_enabled()
        assert json.loads(path.read_text())["models"][0]["model"] == "openai:m-1"
        send(page, "hi")
        page.wait_for_selector("[data-testid=answer]:has-text('hello from the model')")
