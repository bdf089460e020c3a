"""The web routes attacked through a real uvicorn: another machine naming a loopback Host,
proxy credentials standing in for a script's token, run ids and tool call ids that a
program or a provider chose, and bodies that are not what the API reads. Every refusal is
``{"detail": {code, message, hint}}`` and writes nothing; every odd but valid id works."""

from __future__ import annotations

import asyncio
import base64
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from lovia import Agent, ApprovalPending, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia.demo import demo_agent
from lovia.stores.run_options import CheckpointOptions
from lovia.testing import ScriptedProvider, call, text

from ..web_server import InThread
from .conftest import chat_path, detail_of, message, sid, web_app
from .test_browser import Server


def _local_address() -> str | None:
    """An address of this machine that is not a loopback one (None when it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
            address: str = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_without_a_token_another_machine_is_refused_whatever_host_it_names() -> None:
    """An app served on 0.0.0.0 without a token: a client on another address that writes
    ``Host: 127.0.0.1`` (any client can) reads and writes nothing."""
    address = _local_address()
    if address is None:
        pytest.skip("this machine has no address but loopback ones")
    with InThread(web_app(demo_agent(delay=0)), host="0.0.0.0") as served:
        loopback = f"127.0.0.1:{served.port}"
        far = httpx.Client(
            base_url=f"http://{address}:{served.port}",
            transport=httpx.HTTPTransport(local_address=address),
            headers={"Host": loopback},
        )
        with far:
            for method, path, body in (
                ("GET", "/api/sessions", None),
                ("POST", "/api/chat/stream", message("c1", "hi")),
                ("POST", "/api/chat", message("c1", "hi")),
                ("DELETE", "/api/sessions/c1", None),
            ):
                refused = far.request(method, path, json=body)
                assert refused.status_code == 403, (path, refused.text)
                said = detail_of(refused.json())
                assert address in said["message"] and "--token" in said["hint"]
                assert said["code"] == "local_origin_required"
        here = httpx.get(f"http://{loopback}/api/sessions/c1")
        assert here.json()["entries"] == []  # nothing was written; this machine is served


def test_with_a_token_another_machine_is_served_with_it() -> None:
    address = _local_address()
    if address is None:
        pytest.skip("this machine has no address but loopback ones")
    with InThread(web_app(demo_agent(delay=0), token="s3cret"), host="0.0.0.0") as served:
        base = f"http://{address}:{served.port}"
        transport = httpx.HTTPTransport(local_address=address)
        with httpx.Client(base_url=base, transport=transport) as far:
            assert far.get("/api/sessions").status_code == 401
            bearer = {"Authorization": "Bearer s3cret"}
            assert far.get("/api/sessions", headers=bearer).status_code == 200


async def test_a_local_client_of_a_dual_stack_bind_is_loopback() -> None:
    app = web_app(demo_agent(delay=0))
    for client, status in ((("::ffff:127.0.0.1", 5), 200), (("::ffff:10.1.2.3", 5), 403)):
        transport = httpx.ASGITransport(app=app, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            assert (await c.get("/api/sessions")).status_code == status, client


async def test_proxy_credentials_do_not_stand_in_for_a_scripts_token(client_for: Any) -> None:
    """Behind a proxy with Basic auth the browser adds ``Authorization: Basic`` to every
    request to it, from any page: only a Bearer header marks a script, so a page on another
    port of the host cannot write with the cookie."""
    app = web_app(demo_agent(delay=0), token="s3cret")
    page = client_for(app, base_url="http://127.0.0.1:8123")
    page.cookies.set("lovia_token_8123", "s3cret")
    sent = await page.post("/api/chat/stream", json=message("c", "hi"))
    assert sent.status_code == 200
    basic = {"Authorization": "Basic dXNlcjpwYXNz", "Sec-Fetch-Site": "same-site"}
    for method, path in [("POST", f"/api/chat/cancel{sid('c')}"), ("DELETE", chat_path("c"))]:
        refused = await page.request(method, path, headers=basic)
        assert refused.status_code == 403, (method, refused.text)
    assert (await page.get(chat_path("c"))).json()["entries"][0]["content"] == "hi"
    script = {"Authorization": "Bearer s3cret", "Sec-Fetch-Site": "same-site"}
    assert (await page.delete(chat_path("c"), headers=script)).status_code == 200


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay ``amount``."""
    return f"paid {amount}"


PARKED = [("job 🦉", "call 1/2"), ("job\r\ndata: {}", "call\u00e9"), ("job:3", "call_3")]
"""Run ids a program chose (``CheckpointOptions``) and call ids a provider chose."""


def _park(db: Path) -> None:
    async def park() -> None:
        session, checkpointer = SQLiteSession(db, wal=True), SQLiteCheckpointer(db, wal=True)
        for n, (run_id, call_id) in enumerate(PARKED):
            turns = [call("pay", {"amount": n}, call_id=call_id), text("done")]
            agent = Agent(
                "payer",
                model=ScriptedProvider(turns),
                tools=[pay],
                approval_handler=lambda *_: "defer",
            )
            with pytest.raises(ApprovalPending):
                await Runner.run(
                    agent,
                    "pay",
                    session=session,
                    session_id=f"chat {n}",
                    checkpoint=CheckpointOptions(checkpointer, run_id),
                )
        await session.close()
        await checkpointer.close()

    asyncio.run(park())


@pytest.fixture
def parked(tmp_path: Path) -> Iterator[str]:
    db = tmp_path / "parked.db"
    _park(db)
    answers = Agent("payer", model=ScriptedProvider([text("done")] * 5), tools=[pay])
    with Server(db, agents={"payer": answers}) as server:
        yield server.url.rstrip("/")


def test_odd_run_and_call_ids_are_approved_and_streamed_intact(parked: str) -> None:
    """A run id with an emoji or a line break cannot go in a header as it is (it went out as
    a 500, or a dropped connection); a call id with '/' or non-ASCII could not be named."""
    base = parked
    waiting = httpx.get(f"{base}/api/runs/resumable").json()
    assert sorted(r["run_id"] for r in waiting) == sorted(r for r, _ in PARKED)
    for n, (run_id, call_id) in enumerate(PARKED):
        chat = f"chat {n}"
        # a client reconnecting to the parked chat: its stream names the run in a header
        with httpx.stream("POST", f"{base}/api/chat/reconnect{sid(chat)}", timeout=60) as shown:
            assert shown.status_code == 200
            header = shown.headers["x-lovia-run-id"]
        assert header.isascii() and "\r" not in header and "\n" not in header
        assert httpx.URL("/?r=" + header).params["r"] == run_id  # percent-encoded UTF-8
        decision = {"session_id": chat, "call_id": call_id, "decision": "approve"}
        answer = httpx.post(f"{base}/api/chat/approve", json=decision, timeout=60)
        assert answer.status_code == 200, (run_id, answer.text)
        assert answer.json() == {"ok": True, "run_id": run_id}
        for _ in range(600):
            history = httpx.get(f"{base}/api/runs/history", params={"session_id": chat}).json()
            if history and history[0]["status"] == "completed":
                break
            time.sleep(0.05)
        assert history[0]["run_id"] == run_id and history[0]["status"] == "completed"
        entries = httpx.get(f"{base}{chat_path(chat)}").json()["entries"]
        assert [m["content"] for m in entries if m["role"] == "tool"] == [f"paid {n}"]
    assert httpx.get(f"{base}/api/runs/resumable").json() == []


def test_a_decision_for_a_call_that_does_not_wait_is_refused_with_a_hint(parked: str) -> None:
    for call_id in ("call 9", "call\x01"):
        decision = {"session_id": "chat 0", "call_id": call_id, "decision": "approve"}
        refused = httpx.post(f"{parked}/api/chat/approve", json=decision)
        assert refused.status_code == 404, refused.text
        said = detail_of(refused.json())
        assert said["code"] == "approval_not_found" and said["hint"]
    odd = {"session_id": "chat\x01", "call_id": "c", "decision": "approve"}
    assert httpx.post(f"{parked}/api/chat/approve", json=odd).status_code == 422
    assert len(httpx.get(f"{parked}/api/runs/resumable").json()) == len(PARKED)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    with Server(tmp_path / "x.db") as server:
        yield server.url.rstrip("/")


JSON = {"Content-Type": "application/json"}
BODIES = [
    (b"[" * 200_000 + b"]" * 200_000, JSON, 400, "cannot be read as JSON"),  # nested deep
    (b'{"message": "\xff"}', JSON, 400, "cannot be read as JSON"),  # not UTF-8
    (b'{"message": ' + b"9" * 5000 + b"}", JSON, 400, "cannot be read as JSON"),
    (b'{"message": ', JSON, 422, "not valid JSON at character 12"),
    (b'{"message": "hi"}', {"Content-Type": "text/plain"}, 422, "text/plain"),
    (b"message=hi", {"Content-Type": "application/x-www-form-urlencoded"}, 422, "form"),
    (b'{"message": "hi"}', {}, 422, "no Content-Type"),
    (b'"hi"', JSON, 422, "dictionary"),
    (b'{"message": "a\\u0000b"}', JSON, 422, "NUL"),
    (b'{"message": "\\ud800"}', JSON, 422, "valid string"),
]


@pytest.mark.parametrize(("body", "headers", "status", "said"), BODIES)
def test_bodies_the_api_cannot_read_are_refused_with_a_hint(
    served: str, body: bytes, headers: dict[str, str], status: int, said: str
) -> None:
    answer = httpx.post(f"{served}/api/chat/stream", content=body, headers=headers)
    assert answer.status_code == status, answer.text
    assert said in str(answer.json()["detail"]), answer.json()
    assert answer.json().get("hint") or detail_of(answer.json()).get("hint"), answer.json()
    assert httpx.get(f"{served}/api/sessions").json() == []  # nothing was written


def test_unknown_routes_methods_and_missing_tokens_say_what_to_do(served: str) -> None:
    for method, path, status in (
        ("GET", "/api/nope", 404),
        ("PUT", "/api/sessions/c1", 405),
        ("GET", "/api/chat/cancel", 405),
        ("GET", "/static/..%2F..%2Fapp.py", 404),
    ):
        answer = httpx.request(method, served + path)
        assert answer.status_code == status, (path, answer.text)
        said = detail_of(answer.json())
        assert said["message"] and said["code"] and "/docs" in said["hint"]


async def test_a_missing_token_says_how_to_send_one(client_for: Any) -> None:
    client = client_for(web_app(demo_agent(delay=0), token="s3cret"))
    refused = await client.get("/api/sessions")
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    said = detail_of(refused.json())
    assert said["code"] == "server_token" and "Bearer" in said["hint"] and "?token=" in said["hint"]


PNG_HEAD = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 8


def test_an_attachment_the_agent_may_not_read_never_reaches_the_model(tmp_path: Path) -> None:
    """The file panel refuses a workspace file in the agent's denied_paths; a message's
    attachment naming one (as an image, or through '..') is dropped the same way, its bytes
    and its name kept from the run's input, while an allowed one still goes."""
    from lovia.workspace import Workspace

    root = tmp_path / "proj"
    (root / "uploads").mkdir(parents=True)
    (root / "keys.env").write_text("KEY=hunter2")
    (root / "uploads" / "ok.png").write_bytes(PNG_HEAD)
    ws = Workspace.local(str(root), mode="coding", denied_paths=("keys.env",))
    agent = Agent("bot", model=ScriptedProvider([text("seen")]), workspace=ws)
    db = tmp_path / "attach.db"
    with Server(db, agents={"bot": agent}) as served:
        attachments = [
            {"path": "keys.env", "mime": "image/png", "kind": "image"},
            {"path": "uploads/../keys.env", "mime": "text/plain", "kind": "file"},
            {"path": "uploads/ok.png", "mime": "image/png", "kind": "image"},
        ]
        body = {"message": "look", "session_id": "att", "attachments": attachments}
        answer = httpx.post(f"{served.url}api/chat", json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        (first,) = served.segments("att")[0].entries[:1]
    parts = first.content
    assert "keys.env" not in parts[0].text and "uploads/ok.png" in parts[0].text
    images = [p for p in parts if getattr(p, "type", None) == "image"]
    assert len(images) == 1
    assert base64.b64decode(images[0].data) == PNG_HEAD  # the allowed image, not the secret


def test_without_a_token_cors_headers_let_no_other_site_read_the_chats(tmp_path: Path) -> None:
    """``cors_origins=["*"]`` without a token: the CORS headers would let any site's page
    read every chat; a read whose Origin is not loopback is refused (writes already were),
    while a loopback page (a dev server on another port), an origin the app names and
    scripts still read."""
    agent = Agent("echo", model=ScriptedProvider([text("hi")]))
    origins = ["*", "https://front.example"]
    with Server(tmp_path / "cors.db", agents={"echo": agent}, cors_origins=origins) as served:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            assert client.post("api/chat", json=message("c1", "hello")).status_code == 200
            for origin in ("https://evil.example", "null", "http://127.0.0.1.evil.example"):
                read = client.get("api/sessions", headers={"Origin": origin})
                assert read.status_code == 403, (origin, read.text)
                assert detail_of(read.json())["code"] == "local_origin_required"
                assert "c1" not in read.text
                one = client.get(chat_path("c1"), headers={"Origin": origin})
                assert one.status_code == 403 and "hello" not in one.text
            local = client.get("api/sessions", headers={"Origin": "http://localhost:5173"})
            assert local.status_code == 200 and local.headers["access-control-allow-origin"]
            assert [c["id"] for c in local.json()] == ["c1"]
            named = client.get("api/sessions", headers={"Origin": "https://front.example"})
            assert [c["id"] for c in named.json()] == ["c1"]
            assert [c["id"] for c in client.get("api/sessions").json()] == ["c1"]
