"""The Memory editor's routes (``/api/memory``): an agent's Notes read and replaced through
its ``Memory`` plugin (its rules apply), the file the plugin reads changed; an agent without
one, or an unnamed agent among several, refused with nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import Agent
from lovia.plugins.memory import Memory
from lovia.testing import ScriptedProvider, text

from .conftest import web_app


def _app(tmp_path: Path) -> tuple[Any, Memory]:
    memory = Memory(tmp_path / "mem", index=None, auto_curate=False, notes_budget=500)
    return (
        web_app(
            {
                "bot": Agent(name="bot", model=ScriptedProvider([text("hi")]), plugins=[memory]),
                "plain": Agent(name="plain", model=ScriptedProvider([text("hi")])),
            }
        ),
        memory,
    )


async def test_notes_are_read_and_replaced_under_the_plugins_rules(
    tmp_path: Path, client_for: Any
) -> None:
    app, memory = _app(tmp_path)
    c = client_for(app)
    empty = (await c.get("/api/memory", params={"agent": "bot"})).json()
    assert empty == {"content": "", "used": 0, "budget": 500, "dreamed_at": None}
    put = await c.put(
        "/api/memory",
        params={"agent": "bot"},
        json={"content": "- likes  tea\nnot a note\n- LIKES TEA\n- [2025-02] lives in Oslo"},
    )
    assert put.status_code == 200, put.text
    lines = put.json()["content"].splitlines()
    assert (
        len(lines) == 2
        and lines[0].endswith("likes tea")
        and lines[1] == ("- [2025-02] lives in Oslo")
    )
    assert put.json()["used"] == len(put.json()["content"])
    assert await memory.notes_body() == put.json()["content"]  # what the agent reads next
    assert (tmp_path / "mem" / "MEMORY.md").read_text() == put.json()["content"]
    cleared = await c.put("/api/memory", params={"agent": "bot"}, json={"content": ""})
    assert cleared.json()["content"] == "" and await memory.notes_body() == ""


async def test_refusals_write_nothing(tmp_path: Path, client_for: Any) -> None:
    app, memory = _app(tmp_path)
    c = client_for(app)
    await memory.remember("keeps this")
    for params, status, code in (
        ({"agent": "plain"}, 404, "feature_unavailable"),
        ({"agent": "ghost"}, 404, "agent_not_found"),
        ({}, 400, "invalid_request"),
    ):
        r = await c.put("/api/memory", params=params, json={"content": "- replaced"})
        assert (r.status_code, r.json()["detail"]["code"]) == (status, code)
        d = await c.post("/api/memory/dream", params=params)
        assert d.status_code == status
    bad = await c.put("/api/memory", params={"agent": "bot"}, json={"text": "- x"})
    assert bad.status_code == 422
    assert (await memory.notes_body()).strip().endswith("keeps this")
