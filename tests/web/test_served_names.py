"""A chat is recorded under the name its agent is served under (two agents may share an
``Agent.name``), a blocking turn reports the size of its last prompt, and an app's own
lifespan wraps the server's."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.web import ChatStore, RouterDeps, create_app

from .conftest import make_client, web_app


async def test_a_chat_keeps_the_served_name_of_its_agent(client_for: Any) -> None:
    alpha = Agent(name="bot", model=ScriptedProvider([text("a1"), text("a2")]))
    beta = Agent(name="bot", model=ScriptedProvider([text("b1")]))
    c = client_for(web_app({"alpha": alpha, "beta": beta}))
    first = (await c.post("/api/chat", json={"message": "hi", "agent": "alpha"})).json()
    sid = first["session_id"]
    again = await c.post("/api/chat", json={"message": "more", "agent": "beta", "session_id": sid})
    assert again.json()["output"] == "a2"  # the chat's agent answers, not the one named
    (row,) = (await c.get("/api/sessions")).json()
    assert row["agent"] == "alpha"
    history = (await c.get("/api/runs/history", params={"session_id": sid})).json()
    assert {h["agent"] for h in history} == {"alpha"}


async def test_a_blocking_turn_reports_its_last_prompt(client_for: Any) -> None:
    @tool
    async def add(a: int, b: int) -> int:
        return a + b

    model = ScriptedProvider([call("add", {"a": 1, "b": 2}, call_id="c1"), text("3")])
    c = client_for(web_app(Agent(name="bot", model=model, tools=[add])))
    usage = (await c.post("/api/chat", json={"message": "1+2?"})).json()["usage"]
    assert (usage["input_tokens"], usage["last_input_tokens"]) == (2, 1)
    (record,) = (await c.get("/api/runs/history")).json()
    assert record["usage"]["total_tokens"] == usage["total_tokens"]


async def test_an_apps_lifespan_wraps_the_servers(monkeypatch: Any) -> None:
    log: list[str] = []
    real = RouterDeps.lifespan

    @contextlib.asynccontextmanager
    async def ours(self: RouterDeps, app: Any = None) -> AsyncIterator[None]:
        log.append("lovia up")
        async with real(self, app):
            yield
        log.append("lovia down")

    monkeypatch.setattr(RouterDeps, "lifespan", ours)

    @contextlib.asynccontextmanager
    async def yours(app: Any) -> AsyncIterator[dict[str, str]]:
        log.append("open")
        yield {"pool": "p"}
        log.append("close")

    app = create_app(
        Agent(name="bot", model=ScriptedProvider([text("hi")])),
        store=ChatStore.in_memory(),
        titles=False,
        lifespan=yours,
    )
    async with app.router.lifespan_context(app) as state, make_client(app) as c:
        assert state == {"pool": "p"}
        assert (await c.post("/api/chat", json={"message": "x"})).status_code == 200
    assert log == ["open", "lovia up", "lovia down", "close"]


async def test_a_new_chat_on_several_agents_must_name_one(client_for: Any) -> None:
    alpha = Agent(name="a", model=ScriptedProvider([text("a1"), text("a2")]))
    beta = Agent(name="b", model=ScriptedProvider([text("b1")]))
    c = client_for(web_app({"alpha": alpha, "beta": beta}))
    refused = await c.post("/api/chat", json={"message": "hi"})
    assert refused.status_code == 400
    assert refused.json()["detail"]["code"] == "invalid_request"
    assert "alpha" in refused.json()["detail"]["hint"]
    streamed = await c.post("/api/chat/stream", json={"message": "hi"})
    assert streamed.status_code == 400
    assert (await c.get("/api/sessions")).json() == []  # nothing was written
    sid = (await c.post("/api/chat", json={"message": "hi", "agent": "alpha"})).json()["session_id"]
    again = await c.post("/api/chat", json={"message": "more", "session_id": sid})
    assert again.json()["output"] == "a2"  # an existing chat keeps its agent, named or not
