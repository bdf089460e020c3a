"""Options 0.9.119's web pages document, served by a real uvicorn on 127.0.0.1 and asked over
HTTP as a program of that release asks: ``cors_origins``, a ``CORSMiddleware`` of the app's
own beside ``auth=``, ..."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from fastapi import HTTPException, Request
from fastapi.middleware.cors import CORSMiddleware

from lovia import Agent
from lovia.testing import ScriptedProvider, text
from lovia.web import ChatUI

from ..web_server import InThread
from .conftest import detail_of, web_app

ALLOWED = "https://chat.example.com"
EVIL = "https://evil.example"


def _agent(answers: int = 4) -> Agent:
    return Agent(name="bot", model=ScriptedProvider([text("ok") for _ in range(answers)]))


def _page_of(origin: str) -> dict[str, str]:
    """The headers a browser puts on a fetch from a page of ``origin`` to this server."""
    return {"Origin": origin, "Sec-Fetch-Site": "cross-site"}


def test_cors_origins_lets_the_pages_of_those_origins_write() -> None:
    """``create_app(cors_origins=[...])`` names the browser origins the API serves: a page of
    one of them sends messages (as in 0.9.119), another site's page still may not."""
    with InThread(web_app(_agent(), cors_origins=[ALLOWED])) as served:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            sent = client.post("/api/chat", json={"message": "hi"}, headers=_page_of(ALLOWED))
            assert sent.status_code == 200, sent.text
            assert sent.json()["output"] == "ok"
            assert sent.headers["access-control-allow-origin"] == ALLOWED
            # the preflight a page's JSON POST sends first
            preflight = client.options(
                "/api/chat",
                headers={
                    "Origin": ALLOWED,
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "content-type",
                },
            )
            assert preflight.status_code == 200
            assert preflight.headers["access-control-allow-origin"] == ALLOWED
            refused = client.post("/api/chat", json={"message": "hi"}, headers=_page_of(EVIL))
            assert refused.status_code == 403
            assert detail_of(refused.json())["code"] == "local_origin_required"
            assert "access-control-allow-origin" not in refused.headers
            chats = client.get("/api/sessions").json()
            assert len(chats) == 1  # the refused message wrote nothing


def test_auth_with_a_cors_middleware_of_the_apps_own_serves_that_front_end() -> None:
    """The cross-origin front end 0.9.119's web-server page shows: ``auth=`` reading a
    session cookie, and ``app.add_middleware(CORSMiddleware, allow_origins=[...],
    allow_credentials=True)`` added after ``create_app``. That origin's page writes with its
    cookie; another site's page, sending the same cookie, does not."""

    async def by_cookie(request: Request) -> None:
        if request.cookies.get("acme_session") != "alice":
            raise HTTPException(status_code=401)

    app = web_app(_agent(), auth=by_cookie)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=[ALLOWED],
        allow_credentials=True,
        allow_methods=["*"],
        allow_headers=["*"],
    )
    with InThread(app) as served:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            client.cookies.set("acme_session", "alice")
            sent = client.post("/api/chat", json={"message": "hi"}, headers=_page_of(ALLOWED))
            assert sent.status_code == 200, sent.text
            assert sent.headers["access-control-allow-origin"] == ALLOWED
            assert sent.headers["access-control-allow-credentials"] == "true"
            chat = sent.json()["session_id"]
            renamed = client.patch(
                f"/api/sessions/{chat}", json={"title": "mine"}, headers=_page_of(ALLOWED)
            )
            assert renamed.status_code == 200, renamed.text
            refused = client.post("/api/chat", json={"message": "hi"}, headers=_page_of(EVIL))
            assert refused.status_code == 403
            assert detail_of(refused.json())["code"] == "local_origin_required"
            client.cookies.clear()
            anonymous = client.post("/api/chat", json={"message": "hi"}, headers=_page_of(ALLOWED))
            assert anonymous.status_code == 401


def test_a_wildcard_origin_opens_no_writes() -> None:
    """``cors_origins=["*"]`` sends CORS headers, but names no site whose page may drive the
    agent: a write from another site's page stays refused, and without a token its reads
    too (the headers would let it read every chat); a loopback page still reads."""
    with InThread(web_app(_agent(), cors_origins=["*"])) as served:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            read = client.get("/api/info", headers={"Origin": "http://localhost:5173"})
            assert read.status_code == 200
            assert read.headers["access-control-allow-origin"] == "*"
            assert client.get("/api/info", headers={"Origin": EVIL}).status_code == 403
            refused = client.post("/api/chat", json={"message": "hi"}, headers=_page_of(EVIL))
            assert refused.status_code == 403


def test_chat_ui_takes_its_arguments_in_0_9_119s_order() -> None:
    """``ChatUI``'s fields are 0.9.119's, in its order: a call that passes them by position
    (``default_lang`` before ``messages``) means what it meant there."""
    ui = ChatUI("Ask Acme", None, (), None, None, (), (), None, None, "ja", {"ja": {"x.y": "z"}})
    assert (ui.default_lang, dict(ui.messages)) == ("ja", {"ja": {"x.y": "z"}})
    with InThread(web_app(_agent(), ui=ui)) as served:
        page = httpx.get(served.url + "/", timeout=30).text
    assert '"default_lang": "ja"' in page and '"x.y": "z"' in page and "Ask Acme" in page


def test_a_run_waiting_for_approval_is_listed_with_its_source() -> None:
    """``GET /api/runs`` lists a run waiting on a person's decision as
    ``blocked_on_approval`` with why it started (``source``), as ``run_started`` said it."""
    from lovia import tool
    from lovia.testing import call

    @tool(needs_approval=True)
    def pay() -> str:
        """Pay."""
        return "paid"

    agent = Agent(name="bot", model=ScriptedProvider([call("pay", {}), text("done")]), tools=[pay])
    with InThread(web_app(agent)) as served:
        with httpx.Client(base_url=served.url, timeout=30) as client:
            body = {"message": "pay it", "session_id": "c1"}
            with client.stream("POST", "/api/chat/stream", json=body) as stream:
                for line in stream.iter_lines():
                    if line == "event: approval_required":
                        break
            deadline = time.monotonic() + 20
            while True:
                runs = client.get("/api/runs").json()
                if runs and runs[0]["status"] == "blocked_on_approval":
                    break
                assert time.monotonic() < deadline, runs
                time.sleep(0.05)
            assert [(r["session_id"], r["source"]) for r in runs] == [("c1", "user")]


def test_an_upload_over_the_limit_is_file_too_large(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.9.119's HTTP API names the upload limit's refusal ``413 file_too_large``: a file over
    ``LOVIA_MAX_UPLOAD_MB`` gets that code however far over it is, its body refused before it
    is read whole; one under it is saved."""
    from lovia.workspace import Workspace

    monkeypatch.setenv("LOVIA_MAX_UPLOAD_MB", "1")
    agent = Agent(name="bot", model=ScriptedProvider([]), workspace=Workspace.local(tmp_path))
    with InThread(web_app(agent)) as served:
        with httpx.Client(base_url=served.url, timeout=60) as client:
            for size in (1024 * 1024 + 1, 3 * 1024 * 1024):  # over, and over the framing too
                file = {"file": ("big.txt", b"x" * size, "text/plain")}
                refused = client.post("/api/workspace/upload", files=file)
                assert refused.status_code == 413, refused.text
                assert detail_of(refused.json())["code"] == "file_too_large"
            file = {"file": ("small.txt", b"x" * 1000, "text/plain")}
            saved = client.post("/api/workspace/upload", files=file)
            assert saved.status_code == 200 and saved.json()["path"] == "uploads/small.txt"
    assert not (tmp_path / "uploads" / "big.txt").exists()


def test_a_422_names_a_list_items_place_by_number() -> None:
    """A body that does not fit is ``422`` with FastAPI's ``loc``: the place of an item in a
    list is a number, as in 0.9.119 (``["body", "attachments", 0, "mime"]``)."""
    with InThread(web_app(_agent())) as served:
        body = {"message": "see", "attachments": [{"path": "uploads/a.md"}]}
        refused = httpx.post(served.url + "/api/chat", json=body, timeout=30)
    assert refused.status_code == 422
    locs = [problem["loc"] for problem in refused.json()["detail"]]
    assert ["body", "attachments", 0, "mime"] in locs
