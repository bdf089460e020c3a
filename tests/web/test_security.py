"""Security of the API: the token (Bearer or cookie), the page's CSP, inert model output."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import Agent, InMemorySession
from lovia.demo import demo_agent
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatStore
from lovia.web.auth import COOKIE_NAME, is_loopback

from .conftest import chat_path, detail_of, events_of, message, sid, web_app

ROUTES = [
    ("GET", "/api/info"),
    ("GET", "/api/agents"),
    ("GET", "/api/agents/demo"),
    ("POST", "/api/chat"),
    ("POST", "/api/chat/stream"),
    ("POST", f"/api/chat/reconnect{sid('c1')}"),
    ("POST", "/api/chat/approve"),
    ("POST", "/api/chat/answer"),
    ("POST", f"/api/chat/cancel{sid('c1')}"),
    ("POST", "/api/chat/inject"),
    ("POST", "/api/chat/uninject"),
    ("GET", "/api/sessions"),
    ("DELETE", "/api/sessions"),
    ("GET", "/api/sessions/c1"),
    ("PATCH", "/api/sessions/c1"),
    ("DELETE", "/api/sessions/c1"),
    ("POST", "/api/sessions/c1/rewind"),
    ("POST", "/api/sessions/c1/fork"),
    ("GET", "/api/sessions/c1/export"),
    ("GET", "/api/sessions/c1/todos"),
    ("POST", "/api/sessions/c1/followups"),
    ("GET", "/api/sessions/c1/ui-data/abcdefghijklmnopqrstuv"),
    ("GET", "/api/sessions/c1/tool-images/c/0"),
    ("GET", "/api/sessions/c1/processes"),
    ("GET", "/api/runs"),
    ("GET", "/api/runs/history"),
    ("GET", "/api/runs/resumable"),
    ("GET", "/api/events"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_every_api_route_answers_401_without_the_token(
    client_for: Any, method: str, path: str
) -> None:
    client = client_for(web_app(demo_agent(delay=0), token="s3cret"))
    body = message("c1", "hi") if path.startswith("/api/chat") else None
    refused = await client.request(method, path, json=body)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"
    assert detail_of(refused.json())["code"] == "server_token"
    wrong = await client.request(method, path, json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401


async def test_the_bearer_header_or_the_cookie_lets_requests_in(client_for: Any) -> None:
    app = web_app(demo_agent(delay=0), token="s3cret")
    bearer = client_for(app, headers={"Authorization": "Bearer s3cret"})
    assert (await bearer.get("/api/sessions")).status_code == 200
    events = events_of(await bearer.post("/api/chat/stream", json=message("c", "hi")))
    assert events[-1]["event"] == "done"
    assert (await client_for(app).get("/healthz")).json() == {"status": "ok"}  # no token
    browser = client_for(app)
    exchange = await browser.get("/?token=s3cret")
    assert exchange.status_code == 303 and exchange.headers["location"] == "/"
    cookie = exchange.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    browser.cookies.set(COOKIE_NAME, "s3cret")
    assert (await browser.get(chat_path("c"))).json()["entries"][0]["content"] == "hi"
    assert (await client_for(app).get("/?token=guess")).status_code == 401


async def test_the_page_and_static_files_load_without_the_token(client_for: Any) -> None:
    client = client_for(web_app(demo_agent(), token="s3cret"))
    page = await client.get("/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert (await client.get("/static/app.js")).status_code == 200


async def test_the_page_forbids_inline_scripts(client_for: Any) -> None:
    page = await client_for(web_app(demo_agent())).get("/")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "<script>" not in page.text  # the page's own code is in modules, not inline


def test_loopback_hosts_are_told_apart_from_the_rest() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.8.0.1", "::1", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "::", "example.org"))


async def test_model_output_with_markup_travels_as_json_text_only(client_for: Any) -> None:
    """XSS probe at the API: markup stays data inside JSON strings; the page sanitizes it
    (the browser test checks that nothing executes)."""
    probe = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    agent = Agent("x", model=ScriptedProvider([text(probe)]))
    client = client_for(web_app(agent))
    response = await client.post("/api/chat/stream", json=message("x", "hi"))
    assert response.headers["content-type"].startswith("text/event-stream")
    assert events_of(response)[-1]["output"] == probe
    detail = await client.get(chat_path("x"))
    assert detail.headers["content-type"] == "application/json"
    assert detail.json()["entries"][1]["content"] == probe


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8000", "localhost.evil.example", "127.0.0.1:x", "[::1"]
)
async def test_without_a_token_a_foreign_host_header_is_refused(client_for: Any, host: str) -> None:
    """DNS rebinding: a page whose domain now points at 127.0.0.1 sends its own Host."""
    client = client_for(web_app(demo_agent(delay=0)))
    for path in ("/api/sessions", "/", "/api/info"):
        refused = await client.get(path, headers={"Host": host})
        assert refused.status_code == 400, (path, refused.text)
        assert "loopback" in detail_of(refused.json())["message"]


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.0.0.1:8000", "localhost:8000", "[::1]:8000", "[::1]", "127.0.0.2"]
)
async def test_without_a_token_loopback_hosts_with_any_port_are_served(
    client_for: Any, host: str
) -> None:
    client = client_for(web_app(demo_agent(delay=0)))
    assert (await client.get("/api/sessions", headers={"Host": host})).json() == []
    assert (await client.get("/", headers={"Host": host})).status_code == 200


@pytest.mark.parametrize(
    "origin", ["https://evil.example", "null", "http://127.0.0.1.evil.example"]
)
async def test_without_a_token_a_post_from_another_site_is_refused(
    client_for: Any, origin: str
) -> None:
    """CSRF: another site's page may send a POST to 127.0.0.1; its Origin gives it away."""
    session = InMemorySession()
    client = client_for(web_app(demo_agent(delay=0), store=ChatStore(session)))
    sent = await client.post(
        "/api/chat/stream", json=message("c", "hi"), headers={"Origin": origin}
    )
    assert sent.status_code == 403, sent.text
    assert await session.load("c") == []
    deleted = await client.delete(chat_path("c"), headers={"Origin": origin})
    assert deleted.status_code == 403
    # reading stays allowed: the Host check already keeps foreign pages out
    assert (await client.get("/api/sessions", headers={"Origin": origin})).status_code == 200


async def test_without_a_token_loopback_origins_and_no_origin_may_post(client_for: Any) -> None:
    session = InMemorySession()
    client = client_for(web_app(demo_agent(delay=0), store=ChatStore(session)))
    for origin in ("http://127.0.0.1:8000", "http://localhost:5173", "http://[::1]:8000", None):
        headers = {"Origin": origin} if origin else {}
        sent = await client.post("/api/chat/stream", json=message("c", "hi"), headers=headers)
        assert events_of(sent)[-1]["event"] == "done", origin
    assert len(await session.segments("c")) == 4


async def test_with_a_token_the_host_and_origin_are_not_checked(client_for: Any) -> None:
    """A tokened server may sit behind any name (a proxy, a LAN address): the token decides."""
    client = client_for(
        web_app(demo_agent(delay=0), token="s3cret"),
        headers={"Authorization": "Bearer s3cret", "Host": "lovia.lan:8000"},
    )
    assert (await client.get("/api/sessions")).status_code == 200
    sent = await client.post(
        "/api/chat/stream", json=message("c", "hi"), headers={"Origin": "https://lovia.lan"}
    )
    assert events_of(sent)[-1]["event"] == "done"


async def test_the_token_cookie_is_named_after_the_port_and_writes_need_this_origin(
    client_for: Any,
) -> None:
    """Issue 14 item 4: cookies ignore ports, so a page on another port of the host gets the
    cookie sent along; its state-changing requests are refused by their Origin, and another
    server's cookie (named for its port) does not open this one."""
    app = web_app(demo_agent(delay=0), token="s3cret")
    base = "http://127.0.0.1:8123"
    page = client_for(app, base_url=base)
    exchange = await page.get("/?token=s3cret")
    assert exchange.headers["set-cookie"].startswith("lovia_token_8123=")
    page.cookies.set("lovia_token_8123", "s3cret")
    own = {"Origin": base, "Sec-Fetch-Site": "same-origin"}
    sent = await page.post("/api/chat/stream", json=message("c", "hi"), headers=own)
    assert events_of(sent)[-1]["event"] == "done"
    for foreign in (
        {"Origin": "http://127.0.0.1:9999"},
        {"Origin": "http://127.0.0.1:9999", "Sec-Fetch-Site": "same-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "null"},
    ):
        for method, path in [("POST", f"/api/chat/cancel{sid('c')}"), ("DELETE", chat_path("c"))]:
            refused = await page.request(method, path, headers=foreign)
            assert refused.status_code == 403, (foreign, method, refused.text)
    assert (await page.get(chat_path("c"))).json()["entries"][0]["content"] == "hi"
    other = client_for(app, base_url=base)
    other.cookies.set("lovia_token_9999", "s3cret")  # the cookie of a server on port 9999
    assert (await other.get("/api/sessions")).status_code == 401
    script = client_for(app, base_url=base, headers={"Authorization": "Bearer s3cret"})
    assert (await script.delete(chat_path("c"))).status_code == 200  # no Origin: a script


async def test_the_favicon_is_served(client_for: Any) -> None:
    client = client_for(web_app(demo_agent()))
    icon = await client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    page = await client.get("/")
    assert 'rel="icon"' in page.text
    assert (await client.get("/static/favicon.svg")).status_code == 200


def test_a_body_that_stops_halfway_gets_408_from_a_real_server() -> None:
    """Issue 14 item 13: half a body and then silence does not hold the connection open."""
    import socket
    import threading
    import time

    import uvicorn

    app = web_app(demo_agent(delay=0), body_timeout=0.5)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive()
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
            conn.sendall(
                b"POST /api/chat/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                b'{"message":'
            )
            chunks = []
            while chunk := conn.recv(4096):  # headers and body may arrive apart; to close
                chunks.append(chunk)
            answer = b"".join(chunks).decode()
        assert answer.startswith("HTTP/1.1 408"), answer
        assert "did not arrive" in answer
    finally:
        server.should_exit = True
        thread.join(timeout=15)
