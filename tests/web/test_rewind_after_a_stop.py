"""An edit right after a stop: the rewind waits (bounded) for the stopped run to save what it
said, then cuts, as 0.9.119's http-api.md has a rewind answer over the transcript the page
shows. Here a stopped run's async tool is cancelled at once, but a sync tool's thread is
waited for a few seconds; a rewind sent meanwhile used to be refused (409 ``run_active``)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from lovia import Agent, RunContext, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry
from lovia.web import ChatStore

from .conftest import sid, web_app


async def test_a_rewind_waits_for_a_stopped_run_still_saving_then_cuts(client_for: Any) -> None:
    started, heard, release = threading.Event(), threading.Event(), threading.Event()

    @tool
    def slow(ctx: RunContext[Any]) -> str:
        """Work until told to stop, then finish up until released."""
        started.set()
        while not ctx.cancel_token.cancelled:
            release.wait(0.01)
        heard.set()
        release.wait(10)  # finishing up, within the stop's grace for a sync tool
        return "finished"

    model = ScriptedProvider([text("a1"), call("slow", {}, call_id="c1"), text("a2")])
    store = ChatStore.in_memory()
    client = client_for(web_app(Agent(name="bot", model=model, tools=[slow]), store=store))
    first = await client.post("/api/chat", json={"message": "one", "session_id": "s"})
    assert first.status_code == 200
    turn = asyncio.create_task(client.post("/api/chat", json={"message": "two", "session_id": "s"}))
    await asyncio.wait_for(asyncio.to_thread(started.wait, 10), 15)
    stop = asyncio.create_task(client.post(f"/api/chat/cancel{sid('s')}"))
    await asyncio.wait_for(asyncio.to_thread(heard.wait, 10), 15)  # the run is stopping

    rewind = asyncio.create_task(client.post("/api/sessions/s/rewind", json={"user_turn": 1}))
    await asyncio.sleep(0.1)
    assert not rewind.done()  # waiting for the stopped run to save "two"
    release.set()
    answer = await asyncio.wait_for(rewind, 15)

    assert answer.status_code == 200, answer.text
    assert answer.json()["removed"] >= 1  # "two" (and its call), saved by the stop, then cut
    assert [m["content"] for m in answer.json()["entries"]] == ["one", "a1"]
    assert (await asyncio.wait_for(stop, 15)).json()["stopped"]
    assert (await asyncio.wait_for(turn, 15)).status_code == 409  # run_cancelled
    said = [e.content for e in await store.session.load("s") if isinstance(e, InputEntry)]
    assert said == ["one"]  # the stopped run wrote nothing after the cut
