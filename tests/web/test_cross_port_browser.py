"""The cross-port attack in Debian's Chromium (issue 14): a page served on another port of
127.0.0.1 fires the simple requests a browser lets any page send (``no-cors`` POSTs without
a body: regenerate, stop) at a ``lovia web`` without a token. Their ``Origin`` is a loopback
one; Chromium marks them ``Sec-Fetch-Site: same-site``, and the server refuses them, so the
chat stays exactly as it was. The server's own page still works (``same-origin``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .test_browser import Server, browser

__all__ = ["browser"]  # the fixture, used by name


@pytest.fixture
def two(tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    with Server(tmp_path / "target.db") as target, Server(tmp_path / "other.db") as other:
        yield target, other


def _chat(base: str, chat_id: str) -> Any:
    return httpx.get(f"{base}api/sessions/{chat_id}", timeout=30).json()


def test_a_page_on_another_port_cannot_regenerate_or_stop(browser: Any, two: Any) -> None:
    target, other = two
    sent = httpx.post(
        f"{target.url}api/chat/stream",
        json={"message": "tell me a story", "session_id": "victim"},
        timeout=60,
    )
    assert "event: done" in sent.text
    before = _chat(target.url, "victim")

    # the other program's page, on another port of 127.0.0.1 (its own page: no CSP of ours)
    context = browser.new_context(bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(other.url)
        page.wait_for_selector("body[data-ready=true]")
        fired = page.evaluate(
            """async (base) => {
                const out = [];
                for (const path of ['sessions/victim/rewind', 'chat/cancel?session_id=victim']) {
                    const r = await fetch(base + 'api/' + path,
                                          {method: 'POST', mode: 'no-cors'});
                    out.push(r.type);
                }
                return out;
            }""",
            target.url,
        )
        assert fired == ["opaque", "opaque"]  # sent and answered; the page cannot read it
    finally:
        context.close()
    assert json.dumps(_chat(target.url, "victim")) == json.dumps(before)  # nothing changed

    # the server's own page may do the same (same-origin)
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(target.url)
        page.wait_for_selector("body[data-ready=true]")
        status = page.evaluate(
            """async () => {
                const json = { method: 'POST', headers: { 'Content-Type': 'application/json' } };
                const rewound = await fetch('/api/sessions/victim/rewind',
                    { ...json, body: JSON.stringify({ user_turn: 0 }) });
                const sent = await fetch('/api/chat/stream',
                    { ...json, body: JSON.stringify({ message: 'again', session_id: 'victim' }) });
                await sent.text();
                return [rewound.status, sent.status];
            }"""
        )
        assert status == [200, 200]
    finally:
        context.close()
    after = _chat(target.url, "victim")
    assert [e["run_id"] for e in after["entries"]] != [e["run_id"] for e in before["entries"]]
