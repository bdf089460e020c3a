"""``put_ui_data`` in a served run keeps the component's data with the run's chat, and the
chat's route serves it (cacheable: a ref names its data for good); another chat's ref and a
deleted chat's are 404."""

from __future__ import annotations

import json
from typing import Any

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, call, text
from lovia.web import put_ui_data, ui_result

from .conftest import events_of, web_app

ROWS = {"columns": ["n"], "rows": [[i] for i in range(50)]}


@tool
async def query() -> str:
    """The rows for the page, a preview for the model."""
    return ui_result("table", {"columns": ["n"], "rows": [[0]]}, data=await put_ui_data(ROWS))


async def test_a_served_run_keeps_its_components_data_with_its_chat(client_for: Any) -> None:
    model = ScriptedProvider([call("query", {}, call_id="c1"), text("done")] * 2)
    c = client_for(web_app(Agent(name="bot", model=model, tools=[query])))
    streamed = await c.post("/api/chat/stream", json={"message": "go"})
    events = events_of(streamed)
    sid = next(e["session_id"] for e in events if e.get("session_id"))
    output = next(e["result"] for e in events if e["event"] == "tool_result")
    ref = json.loads(output)["lovia_ui"]["data"]
    served = await c.get(f"/api/sessions/{sid}/ui-data/{ref}")
    assert served.json() == ROWS and "immutable" in served.headers["cache-control"]
    blocking = await c.post("/api/chat", json={"message": "again"})
    other_sid = blocking.json()["session_id"]
    assert (await c.get(f"/api/sessions/{other_sid}/ui-data/{ref}")).status_code == 404
    assert (await c.delete(f"/api/sessions/{sid}")).status_code == 200
    assert (await c.get(f"/api/sessions/{sid}/ui-data/{ref}")).status_code == 404
