"""``start_session`` (the ``Scheduling`` plugin, as 0.9.119's web server has it): a chat's
agent opens a new top-level chat that runs at once on the instruction, in the client context
of the run that called it, linked back to its source (``origin.kind == "spawn"``) but owned
by neither; at the server's run limit, or outside a served run, nothing is made."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from lovia import Agent, Runner, ToolResultEntry
from lovia.messages import Message
from lovia.testing import ScriptedProvider, call, text
from lovia.web import ChatStore, RunTrigger
from lovia.web.scheduling import Scheduling

from .conftest import approve_when_asked, until, web_app


def _last_user(messages: list[Message]) -> str:
    users = [m for m in messages if getattr(m, "role", None) == "user"]
    content = users[-1].content if users else ""
    return content if isinstance(content, str) else str(content)


def _brain(messages: list[Message]) -> Any:
    """One model for every chat: a chat asked to open another calls start_session once,
    then says so; the opened chat answers its instruction."""
    said = _last_user(messages)
    called = any(getattr(m, "role", None) == "tool" for m in messages)
    if said.startswith("open a chat"):
        if called:
            return text("started it")
        args = {"instruction": "count to 3"}
        if "titled" in said:
            args["title"] = "Counting"
        return call("start_session", args, call_id="s-1")
    return text(f"answer to {said}")


def _agent(store: ChatStore) -> Agent:
    return Agent(name="bot", model=ScriptedProvider([_brain] * 20), plugins=[Scheduling(store)])


def _tool_result(chat: dict[str, Any]) -> dict[str, Any]:
    for entry in chat["entries"]:
        if entry.get("type") == "tool_result" or entry.get("role") == "tool":
            return entry
    raise AssertionError(chat["entries"])


async def test_a_chat_started_by_the_agent_runs_at_once_and_links_back(client_for: Any) -> None:
    store = ChatStore.in_memory()
    triggers: list[RunTrigger] = []
    app = web_app(_agent(store), store=store, run_deps=lambda t: triggers.append(t) or {})
    client = client_for(app)
    body = {"message": "open a chat, titled", "session_id": "s1", "context": {"team": "red"}}
    assert (await client.post("/api/chat/stream", json=body)).status_code == 200

    async def listed() -> list[dict[str, Any]]:
        chats = (await client.get("/api/sessions")).json()
        return [c for c in chats if c["id"] != "s1"]

    [made] = await until(listed)
    assert (made["origin_kind"], made["title"]) == ("spawn", "Counting")

    async def answered() -> dict[str, Any] | None:
        chat = (await client.get(f"/api/sessions/{made['id']}")).json()
        said = [e.get("content") for e in chat["entries"]]
        return chat if "answer to count to 3" in said else None

    chat = await until(answered)
    assert chat["origin"]["kind"] == "spawn" and chat["origin"]["session_id"] == "s1"
    assert [e.get("content") for e in chat["entries"] if e.get("role") == "user"] == [
        "count to 3"
    ]  # none of the source chat's history
    source = (await client.get("/api/sessions/s1")).json()
    result = json.loads(_tool_result(source)["content"])
    assert result == {"session_id": made["id"], "title": "Counting", "status": "started"}
    assert "answer to count to 3" not in [e.get("content") for e in source["entries"]]
    # the new chat's run: its own source, in the client context of the run that started it
    spawned = [t for t in triggers if t.session_id == made["id"]]
    assert [(t.source, dict(t.client_context)) for t in spawned] == [("spawn:s1", {"team": "red"})]
    runs = await store.list_runs(source="spawn:s1")
    assert [r.session_id for r in runs] == [made["id"]]
    # owned by neither: deleting the source leaves it
    assert (await client.delete("/api/sessions/s1")).status_code == 200
    assert (await client.get(f"/api/sessions/{made['id']}")).json()["entries"]


async def test_at_the_run_limit_nothing_is_started_and_no_chat_is_left(client_for: Any) -> None:
    store = ChatStore.in_memory()
    client = client_for(web_app(_agent(store), store=store, max_background_runs=1))
    body = {"message": "open a chat", "session_id": "s1"}
    assert (await client.post("/api/chat/stream", json=body)).status_code == 200
    source = (await client.get("/api/sessions/s1")).json()
    refused = _tool_result(source)
    assert "Nothing started" in refused["content"], refused
    await asyncio.sleep(0.2)
    assert [c["id"] for c in (await client.get("/api/sessions")).json()] == ["s1"]


async def test_outside_the_web_server_the_call_fails_and_says_why() -> None:
    store = ChatStore.in_memory()
    model = ScriptedProvider(
        [call("start_session", {"instruction": "count"}, call_id="c1"), text("ok")]
    )
    agent = Agent(name="bot", model=model, plugins=[Scheduling(store)])
    result = await Runner.run(agent, "open a chat", session=store.session, session_id="x")
    [failed] = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert failed.is_error and "only in a chat of the web app" in failed.output
    assert await store.list() == []


async def test_a_schedule_the_agent_makes_keeps_the_runs_client_context(
    client_for: Any,
) -> None:
    store = ChatStore.in_memory()
    model = ScriptedProvider(
        [
            call(
                "schedule_run",
                {"instruction": "report", "trigger_kind": "every", "trigger_expr": "3600"},
                call_id="c1",
            ),
            text("scheduled"),
        ]
    )
    agent = Agent(
        name="bot",
        model=model,
        plugins=[Scheduling(store)],
    )
    client = client_for(web_app(agent, store=store, run_deps=lambda t: {}))
    body = {"message": "every hour", "session_id": "s1", "context": {"team": "red"}}
    stream = asyncio.create_task(client.post("/api/chat/stream", json=body))
    await approve_when_asked(client, "s1", "c1")  # schedule_run waits for a person
    [row] = await until(store.list_schedules)
    await asyncio.wait_for(stream, 30)
    assert row.context == {"team": "red"}


async def test_a_served_run_leaves_the_callers_context_as_it_was(client_for: Any) -> None:
    """The run's context vars (its server, its client context, its chat's ``put_ui_data``)
    are set in the run's own task: a program serving the app in process keeps its own."""
    from lovia.web.components import UI_DATA_SINK
    from lovia.web.run_deps import RUN_CLIENT, RUN_SERVER

    store = ChatStore.in_memory()
    client = client_for(web_app(_agent(store), store=store, run_deps=lambda t: {}))
    body = {"message": "open a chat", "session_id": "s1", "context": {"team": "red"}}
    assert (await client.post("/api/chat", json=body)).status_code == 200
    assert (RUN_SERVER.get(), RUN_CLIENT.get(), UI_DATA_SINK.get()) == (None, None, None)
    # and the run itself had them: the chat it started is there
    assert len(await until(lambda: _listed(client))) == 2


async def _listed(client: Any) -> list[Any]:
    chats = (await client.get("/api/sessions")).json()
    return chats if len(chats) == 2 else []
