"""``POST /api/config/test`` (0.9.119's Settings -> Models connection test) against a real
model-list server on 127.0.0.1: ``ok`` with the models, ``auth_failed`` for a refused key,
``unreachable`` with nobody listening, ``unverifiable`` for a server that lists nothing; a
stored profile's key is used without the page sending it, and nothing is written."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lovia.web.api_config import ConfigFile

from ..web_server import free_port
from .conftest import web_app

KEY = "sk-right-key-123456"


class Models(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path != "/v1/models":
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            self.send_response(401)
            self.end_headers()
            return
        body = json.dumps({"data": [{"id": "small-1"}, {"id": "large-2"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def model_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def app_with(tmp_path: Path, base: str) -> tuple[Any, Path]:
    path = tmp_path / ".lovia" / "config.json"
    path.parent.mkdir(parents=True)
    doc = {"version": 1, "models": [{"id": "main", "model": "openai:small-1",
           "base_url": f"{base}/v1", "api_key": KEY}], "roles": {"chat": "main"}}  # fmt: skip
    path.write_text(json.dumps(doc))
    return web_app({}, config_runtime=ConfigFile(path=path, agent_name="assistant")), path


async def test_a_working_connection_lists_its_models(
    client_for: Any, tmp_path: Path, model_server: str
) -> None:
    app, _ = app_with(tmp_path, model_server)
    c = client_for(app)
    body = {"model": "large-2", "base_url": f"{model_server}/v1", "api_key": KEY}
    found = (await c.post("/api/config/test", json=body)).json()
    assert found["outcome"] == "ok"
    assert found["models"] == ["small-1", "large-2"]
    assert found["note"] is None
    unknown = {**body, "model": "openai:missing-3", "context_window": 8000}
    found = (await c.post("/api/config/test", json=unknown)).json()
    assert found["outcome"] == "ok" and "missing-3" in found["note"]
    assert found["context_window"] == 8000


async def test_a_refused_key_and_a_silent_server_are_told_apart(
    client_for: Any, tmp_path: Path, model_server: str
) -> None:
    app, _ = app_with(tmp_path, model_server)
    c = client_for(app)
    wrong = {"model": "small-1", "base_url": f"{model_server}/v1", "api_key": "sk-wrong"}
    assert (await c.post("/api/config/test", json=wrong)).json()["outcome"] == "auth_failed"
    keyless = {**wrong, "api_key": ""}
    assert (await c.post("/api/config/test", json=keyless)).json()["outcome"] == "auth_failed"
    nobody = {**wrong, "base_url": f"http://127.0.0.1:{free_port()}/v1"}
    assert (await c.post("/api/config/test", json=nobody)).json()["outcome"] == "unreachable"
    elsewhere = {**wrong, "base_url": f"{model_server}/other", "api_key": KEY}
    assert (await c.post("/api/config/test", json=elsewhere)).json()["outcome"] == "unverifiable"


async def test_a_stored_profile_is_tested_with_its_own_key_and_nothing_is_written(
    client_for: Any, tmp_path: Path, model_server: str
) -> None:
    app, path = app_with(tmp_path, model_server)
    before = path.read_bytes()
    c = client_for(app)
    found = await c.post("/api/config/test", json={"profile_id": "main"})
    assert found.status_code == 200
    assert found.json()["outcome"] == "ok"
    assert KEY not in found.text
    missing = await c.post("/api/config/test", json={"profile_id": "nope"})
    assert missing.status_code == 404
    assert missing.json()["detail"]["code"] == "model_not_found"
    assert path.read_bytes() == before


async def test_without_a_served_config_there_is_no_connection_test(client_for: Any) -> None:
    c = client_for(web_app({}))
    assert (await c.post("/api/config/test", json={"model": "x"})).status_code == 404
