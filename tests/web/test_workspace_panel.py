"""The file panel over an agent's workspace (``/api/workspace/...``): reads follow the
agent's read access and never leave the root; uploads only create files under
``uploads/``, within their own size limit (over the API's body limit, on a real server)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.workspace import Workspace

from ..web_server import free_port
from .conftest import web_app

PNG = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 16


def _agents(root: Path) -> dict[str, Agent]:
    ws = Workspace.local(str(root), mode="coding", denied_paths=("keys.env",))
    return {
        "bot": Agent(name="bot", model=ScriptedProvider([text("hi")]), workspace=ws),
        "plain": Agent(name="plain", model=ScriptedProvider([text("hi")])),
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "proj"
    (base / "docs").mkdir(parents=True)
    (base / "docs" / "a.md").write_text("# A\n")
    (base / "keys.env").write_text("KEY=1")
    (base / ".hidden").write_text("h")
    (base / "pic.png").write_bytes(PNG)
    (base / "node_modules").mkdir()
    (base / "node_modules" / "x.js").write_text("1")
    (base / "tmp").mkdir()
    (base / "tmp" / "draft.txt").write_text("d")
    now = time.time()
    for i, name in enumerate(["docs/a.md", "pic.png", "node_modules/x.js", "tmp/draft.txt"]):
        os.utime(base / name, (now + i, now + i))
    (tmp_path / "outside.txt").write_text("secret")
    (base / "link.txt").symlink_to(tmp_path / "outside.txt")
    return base


async def test_listing_and_recent_leave_out_what_the_agent_cannot_read(
    root: Path, client_for: Any
) -> None:
    c = client_for(web_app(_agents(root)))
    listed = (await c.get("/api/workspace/files", params={"agent": "bot"})).json()
    paths = [e["path"] for e in listed]
    assert paths[:3] == ["docs", "node_modules", "tmp"]  # directories first
    assert "keys.env" not in paths and ".hidden" not in paths and "link.txt" not in paths
    recent = (await c.get("/api/workspace/recent", params={"agent": "bot"})).json()
    assert [e["path"] for e in recent] == ["pic.png", "docs/a.md"]  # no junk, no scratch
    one = (await c.get("/api/workspace", params={"agent": "bot"})).json()
    assert one == {"name": "proj", "scratch_dir": "tmp"}


@pytest.mark.parametrize("path", ["../outside.txt", "link.txt", "keys.env", "/etc/hostname"])
async def test_a_path_outside_or_denied_is_403_on_every_read(
    root: Path, client_for: Any, path: str
) -> None:
    c = client_for(web_app(_agents(root)))
    for route, extra in (("files", {}), ("file", {}), ("raw", {"download": "1"})):
        r = await c.get(f"/api/workspace/{route}", params={"agent": "bot", "path": path, **extra})
        assert r.status_code == 403, (route, r.text)
        assert r.json()["detail"]["code"] == "path_denied"
        assert "secret" not in r.text


async def test_an_agent_without_a_workspace_and_an_unnamed_agent(
    root: Path, client_for: Any
) -> None:
    c = client_for(web_app(_agents(root)))
    r = await c.get("/api/workspace", params={"agent": "plain"})
    assert (r.status_code, r.json()["detail"]["code"]) == (404, "feature_unavailable")
    r = await c.get("/api/workspace")
    assert (r.status_code, r.json()["detail"]["code"]) == (400, "invalid_request")
    r = await c.get("/api/workspace", params={"agent": "ghost"})
    assert (r.status_code, r.json()["detail"]["code"]) == (404, "agent_not_found")


async def test_raw_previews_images_only_and_revalidates(root: Path, client_for: Any) -> None:
    c = client_for(web_app(_agents(root)))
    r = await c.get("/api/workspace/raw", params={"agent": "bot", "path": "pic.png"})
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, PNG, "image/png")
    again = await c.get(
        "/api/workspace/raw",
        params={"agent": "bot", "path": "pic.png"},
        headers={"if-none-match": r.headers["etag"]},
    )
    assert again.status_code == 304
    md = await c.get("/api/workspace/raw", params={"agent": "bot", "path": "docs/a.md"})
    assert (md.status_code, md.json()["detail"]["code"]) == (415, "unsupported_file_type")


async def test_an_upload_never_overwrites_and_refuses_a_denied_name(
    root: Path, client_for: Any
) -> None:
    c = client_for(web_app(_agents(root)))

    async def send(name: str, data: bytes = b"x") -> httpx.Response:
        return await c.post(
            "/api/workspace/upload", params={"agent": "bot"}, files={"file": (name, data)}
        )

    first, second = (await send("n.txt", b"one")).json(), (await send("n.txt", b"two")).json()
    assert (first["path"], second["path"]) == ("uploads/n.txt", "uploads/n-1.txt")
    assert (root / "uploads" / "n.txt").read_bytes() == b"one"
    escaped = (await send("../../escape.txt")).json()
    assert escaped["path"] == "uploads/escape.txt"
    assert not (root.parent / "escape.txt").exists()
    assert (await send("tool.exe")).status_code == 415
    assert (await send("empty.txt", b"")).status_code == 422


@pytest.fixture
def server(root: Path) -> Iterator[str]:
    """The app under uvicorn on 127.0.0.1 (a real HTTP server, in a thread)."""
    port = free_port()
    srv = uvicorn.Server(
        uvicorn.Config(web_app(_agents(root)), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not srv.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert srv.started, "the server did not start"
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(30)


def test_an_upload_has_its_own_limit_above_the_api_body_limit(
    server: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOVIA_MAX_UPLOAD_MB", "2")
    big = os.urandom(1024 * 1024)  # over the 512 KiB a JSON body may have
    r = httpx.post(
        f"{server}/api/workspace/upload",
        params={"agent": "bot"},
        files={"file": ("big.bin", big)},
        headers={"Origin": server},
        timeout=60,
    )
    assert r.status_code == 415  # .bin is not in the default allowlist
    monkeypatch.setenv("LOVIA_UPLOAD_ALLOWED_EXT", "*")
    r = httpx.post(
        f"{server}/api/workspace/upload",
        params={"agent": "bot"},
        files={"file": ("big.bin", big)},
        headers={"Origin": server},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert (root / "uploads" / "big.bin").read_bytes() == big
    over = httpx.post(
        f"{server}/api/workspace/upload",
        params={"agent": "bot"},
        files={"file": ("huge.bin", big * 3)},
        headers={"Origin": server},
        timeout=60,
    )
    assert over.status_code == 413
    assert not (root / "uploads" / "huge.bin").exists()
    json_body = httpx.post(f"{server}/api/chat", json={"message": "x" * (600 * 1024)}, timeout=60)
    assert json_body.status_code == 413  # the API's own limit is unchanged
