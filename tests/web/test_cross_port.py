"""A page on another port of 127.0.0.1 cannot act on a server without a token (issue 14).

Browsers count every port of a host as the same site, so such a page's POST carries a
loopback ``Origin``; the browser also marks it ``Sec-Fetch-Site: same-site``, and the server
refuses state-changing requests so marked (or ``cross-site``) with 403, before anything is
written. The page's own requests (``same-origin``), typed addresses (``none``) and scripts
(no header) still work. Real ``lovia web`` processes, real HTTP.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..web_server import start_web as _start
from ..web_server import stop_web as _stop
from .conftest import decode, message

LOVIA = Path(sys.executable).with_name("lovia")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    command = [str(LOVIA), "web", "--app", "tests.web.apps:slow", "--db", str(tmp_path / "x.db")]
    proc, base = _start(command)
    try:
        yield base
    finally:
        _stop(proc)


def _answers(response: httpx.Response) -> list[str]:
    return [e["event"] for e in decode(response.text)]


@pytest.mark.parametrize("site", ["same-site", "cross-site", "Same-Site"])
def test_writes_a_browser_marks_as_from_another_origin_are_refused(server: str, site: str) -> None:
    other_port = "http://127.0.0.1:1"  # a loopback Origin: only Sec-Fetch-Site tells
    foreign = {"Origin": other_port, "Sec-Fetch-Site": site}
    with httpx.Client(base_url=server, timeout=30) as c:
        kept = c.post("/api/chat/stream", json=message("kept", "q1"))
        assert _answers(kept)[-1] == "done"
        before = c.get("/api/sessions/kept").json()
        listed = c.get("/api/sessions").json()
        for method, path, body in [
            ("POST", "/api/chat/stream", message("new", "hi")),
            ("POST", "/api/chat", message("kept", "q2")),
            ("POST", "/api/chat/inject", {"session_id": "kept", "message": "q2"}),
            ("POST", "/api/chat/cancel?session_id=kept", None),
            ("POST", "/api/chat/reconnect?session_id=kept", None),
            ("POST", "/api/sessions/kept/rewind", {"user_turn": 0}),
            ("POST", "/api/sessions/kept/fork", {}),
            ("PATCH", "/api/sessions/kept", {"title": "x"}),
            ("DELETE", "/api/sessions/kept", None),
            ("DELETE", "/api/sessions", None),
        ]:
            refused = c.request(method, path, json=body, headers=foreign)
            assert refused.status_code == 403, (method, path, refused.text)
            assert "other origins" in refused.json()["detail"]["message"]
            assert refused.json()["detail"]["hint"]
        # nothing changed: the chat is as it was, the new one was never made
        assert c.get("/api/sessions/kept").json() == before
        assert c.get("/api/sessions").json() == listed
        # reading is not a state change: a GET marked so is still answered
        assert c.get("/api/sessions", headers=foreign).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "same-origin", "Origin": "SELF"},
        {"Sec-Fetch-Site": "none"},
        {},  # a script or the CLI
    ],
)
def test_the_page_itself_typed_addresses_and_scripts_may_write(
    server: str, headers: dict[str, str]
) -> None:
    if headers.get("Origin") == "SELF":
        headers = {**headers, "Origin": server}
    with httpx.Client(base_url=server, timeout=30) as c:
        sent = c.post("/api/chat/stream", json=message("c", "q1"), headers=headers)
        assert _answers(sent)[-1] == "done"
        rewound = c.post("/api/sessions/c/rewind", json={"user_turn": 0}, headers=headers)
        assert rewound.status_code == 200
        assert c.delete("/api/sessions/c", headers=headers).status_code == 200
        assert c.get("/api/sessions").json() == []


def test_a_foreign_origin_is_still_refused_without_sec_fetch_site(server: str) -> None:
    with httpx.Client(base_url=server, timeout=30) as c:
        refused = c.post(
            "/api/chat/stream",
            json=message("c", "hi"),
            headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "same-origin"},
        )
        assert refused.status_code == 403
        assert c.get("/api/sessions").json() == []
