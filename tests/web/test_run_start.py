"""A run's start, as 0.9.119's clients rely on it (issue 30): a client that leaves while its
run is starting leaves the run going, ``/api/runs`` lists a run once it has started, and
``QuestionRegistry.pending`` gives the chat's open question or ``None``."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.tools.human import HumanChannel, ask_human
from lovia.web import ChatStore, QuestionRegistry

from .conftest import until, web_app


class _GatedStore(ChatStore):
    """A chat store (in memory) whose first write of a chat waits for ``gate``: the run
    being started is held in its start until the test opens it."""

    def __init__(self) -> None:
        plain = ChatStore.in_memory()
        super().__init__(plain.session, checkpointer=plain.checkpointer)
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()

    async def upsert(self, *args: Any, **kwargs: Any) -> Any:
        self.waiting.set()
        await self.gate.wait()
        return await super().upsert(*args, **kwargs)


def _agent() -> tuple[Agent, ScriptedProvider]:
    @tool
    async def ping() -> str:
        """Answers at once."""
        return "pong"

    model = ScriptedProvider([call("ping", {}, call_id="c1"), text("done")])
    return Agent(name="bot", model=model, tools=[ping]), model


async def test_a_client_that_leaves_while_its_run_starts_leaves_the_run_going(
    client_for: Any,
) -> None:
    store = _GatedStore()
    agent, model = _agent()
    client = client_for(web_app(agent, store=store))
    body = {"message": "go", "session_id": "s1"}
    request = asyncio.create_task(client.post("/api/chat/stream", json=body))
    await asyncio.wait_for(store.waiting.wait(), 10)
    request.cancel()  # the client leaves while the run is being recorded
    with contextlib.suppress(asyncio.CancelledError):
        await request
    store.gate.set()

    async def answered() -> bool:
        chat = (await client.get("/api/sessions/s1")).json()
        return any(m["content"] == "done" for m in chat["entries"])

    async def ended() -> bool:
        return (await client.get("/api/runs")).json() == []

    await until(answered)
    await until(ended)  # the run leaves the live runs once its answer is written
    assert model.remaining == 0


async def test_runs_lists_a_run_once_it_has_started(client_for: Any) -> None:
    store = _GatedStore()
    agent, _ = _agent()
    client = client_for(web_app(agent, store=store))
    body = {"message": "go", "session_id": "s1"}
    request = asyncio.create_task(client.post("/api/chat", json=body))
    await asyncio.wait_for(store.waiting.wait(), 10)
    assert (await client.get("/api/runs")).json() == []  # still starting
    store.gate.set()
    answer = await asyncio.wait_for(request, 30)
    assert answer.status_code == 200 and answer.json()["output"] == "done"


async def test_question_registry_pending_is_the_open_question_or_none(
    client_for: Any,
) -> None:
    channel = HumanChannel()
    model = ScriptedProvider(
        [call("ask_human", {"question": "which one?"}, call_id="c1"), text("ok")]
    )
    agent = Agent(name="bot", model=model, tools=[ask_human(channel)])
    client = client_for(web_app(agent, question_channel=channel))
    registry = QuestionRegistry(channel)
    assert registry.pending("s1") is None
    assert registry.resolve("s1", "A") is False  # nothing to answer
    body = {"message": "go", "session_id": "s1"}
    request = asyncio.create_task(client.post("/api/chat", json=body))

    async def asked() -> Any:
        return registry.pending("s1")

    question = await until(asked)
    assert question.question == "which one?"
    assert registry.pending("other") is None
    assert registry.resolve("s1", "A") is True
    answer = await asyncio.wait_for(request, 30)
    assert answer.json()["output"] == "ok"
    assert registry.pending("s1") is None
