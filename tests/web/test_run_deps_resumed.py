"""A served run's ``deps`` (``create_app(run_deps=...)``) in every part of the run: after a
person approves a call, the resumed run's tools see ``deps`` built for it, from the client
context the run started with."""

from __future__ import annotations

import asyncio
from typing import Any

from lovia import Agent, RunContext, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.web import RunTrigger

from .conftest import approve_when_asked, decode, until, web_app


async def test_a_run_resumed_by_an_approval_keeps_its_deps(client_for: Any) -> None:
    seen: list[Any] = []
    triggers: list[RunTrigger] = []

    @tool(needs_approval=True)
    async def pay(ctx: RunContext[Any], amount: int) -> str:
        """Pays."""
        seen.append(ctx.deps)
        return f"paid {amount}"

    def run_deps(trigger: RunTrigger) -> dict[str, Any]:
        triggers.append(trigger)
        return {"team": trigger.client_context.get("team"), "source": trigger.source}

    model = ScriptedProvider([call("pay", {"amount": 3}, call_id="c1"), text("done")])
    agent = Agent(name="bot", model=model, tools=[pay])
    client = client_for(web_app(agent, run_deps=run_deps))
    body = {"message": "pay 3", "session_id": "s1", "context": {"team": "red"}}
    stream = asyncio.create_task(client.post("/api/chat/stream", json=body))
    await approve_when_asked(client, "s1", "c1")

    async def answered() -> bool:
        chat = (await client.get("/api/sessions/s1")).json()
        return any(m.get("content") == "done" for m in chat["entries"])

    await until(answered)
    events = decode((await asyncio.wait_for(stream, 30)).text)
    assert any(e["event"] == "approval_required" for e in events)
    assert seen == [{"team": "red", "source": "user"}]
    # built twice: for the run's first part and for its resumption after the decision
    assert [(t.session_id, t.resumed) for t in triggers] == [("s1", False), ("s1", True)]
    assert all(t.client_context == {"team": "red"} for t in triggers)


async def test_the_run_an_approval_resumes_gets_the_approving_request(client_for: Any) -> None:
    # a run_deps written as 0.9.119's docs show (identity from trigger.request, else the
    # scheduler's) built the approved call's deps as "scheduler": the resumption ran with
    # source "user" and no request, which 0.9.119 never did
    seen: list[Any] = []

    @tool(needs_approval=True)
    async def pay(ctx: RunContext[Any], amount: int) -> str:
        """Pays."""
        seen.append(ctx.deps)
        return f"paid {amount}"

    def run_deps(trigger: RunTrigger) -> dict[str, Any]:
        user = trigger.request.headers["x-user"] if trigger.request else "scheduler"
        return {"user": user}

    model = ScriptedProvider([call("pay", {"amount": 3}, call_id="c1"), text("done")])
    agent = Agent(name="bot", model=model, tools=[pay])
    client = client_for(web_app(agent, run_deps=run_deps), headers={"x-user": "alice"})
    body = {"message": "pay 3", "session_id": "s1"}
    stream = asyncio.create_task(client.post("/api/chat/stream", json=body))
    await approve_when_asked(client, "s1", "c1")
    await asyncio.wait_for(stream, 30)

    async def paid() -> bool:
        return bool(seen)

    await until(paid)
    assert seen == [{"user": "alice"}]
