"""Attacks on the chat page as a template, on a real server: a client that writes a new
``Host`` header on every request, and paths that reach the raw template past its guard."""

from __future__ import annotations

import gc
import http.client
import tracemalloc
from pathlib import Path

import pytest

from .test_browser import Server


def _get(server: Server, path: str, host: str = "127.0.0.1") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_a_new_host_header_per_request_does_not_grow_the_server(tmp_path: Path) -> None:
    # every loopback Host passes (any port), and the page was rendered and kept per base URL
    with Server(tmp_path / "lovia.db") as server:
        assert _get(server, "/")[0] == 200
        tracemalloc.start()
        try:
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for port in range(1, 501):
                status, body = _get(server, "/", host=f"127.0.0.1:{port}")
                assert status == 200 and b"lovia-config" in body
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    assert grown < 1_500_000, f"{grown} bytes kept after 500 Host headers"


@pytest.mark.parametrize(
    "path",
    [
        "/static/index.html",
        "/static//index.html",
        "/static/./index.html",
        "/static/index.html/",
        "/static/vendor/../index.html",
    ],
)
def test_the_raw_template_is_never_served(tmp_path: Path, path: str) -> None:
    with Server(tmp_path / "lovia.db") as server:
        status, body = _get(server, path)
        assert status == 404, body[:200]
        assert b"{{" not in body and b"{%" not in body
