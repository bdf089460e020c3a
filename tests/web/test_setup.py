"""Startup checks: a model that cannot be used is reported by /api/health with the fix, and
a message to it is refused before anything is written (issue 17)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from lovia import Agent, InMemoryCheckpointer, InMemorySession
from lovia.web import ChatStore

from .conftest import message, web_app


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nothing listens on it any more


async def test_a_model_without_its_key_is_reported_and_refused_before_any_write(
    client_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    session, cp = InMemorySession(), InMemoryCheckpointer()
    app = web_app(
        Agent("assistant", model="openai:gpt-4.1"), store=ChatStore(session, checkpointer=cp)
    )
    client = client_for(app)
    health = (await client.get("/api/info")).json()
    assert health["demo_agents"] == []
    assert [p["agent"] for p in health["problems"] if p["blocking"]] == ["assistant"]
    assert "no API key" in health["setup_problem"]["message"]
    assert health["setup_problem"]["blocking"] is True
    assert "OPENAI_API_KEY" in health["setup_hint"]
    refused = await client.post("/api/chat/stream", json=message("c1", "hi"))
    assert refused.status_code == 400
    assert "OPENAI_API_KEY" in refused.json()["detail"]["hint"]
    assert "cannot be used" in refused.json()["detail"]["message"]
    assert await session.load("c1") == []
    assert await cp.list_runs() == []  # nothing to "resume" that could only fail again


async def test_a_misspelt_provider_is_reported_with_the_fix_and_refused(
    client_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Agent is built (as in 0.9.119); the page says what to write before any message."""
    monkeypatch.setenv("OPENAI_API_KEY", "set")
    session = InMemorySession()
    client = client_for(
        web_app(Agent("assistant", model="opnai:gpt-4.1"), store=ChatStore(session))
    )
    health = (await client.get("/api/info")).json()
    assert [p["agent"] for p in health["problems"] if p["blocking"]] == ["assistant"]
    assert "unknown model provider 'opnai'" in health["setup_problem"]["message"]
    assert "openai:gpt-4.1" in health["setup_hint"]
    refused = await client.post("/api/chat/stream", json=message("c1", "hi"))
    assert refused.status_code == 400
    assert await session.load("c1") == []


async def test_an_unreachable_base_url_is_a_warning_that_names_the_url(
    client_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _closed_port()
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    client = client_for(web_app(Agent("assistant", model="openai:qwen3")))
    health = (await client.get("/api/info")).json()
    problem = health["setup_problem"]
    assert problem["blocking"] is False  # the server may come up later: sending stays open
    assert f"127.0.0.1:{port}" in problem["message"]
    assert "OPENAI_BASE_URL" in health["setup_hint"]
    assert [p["agent"] for p in health["problems"] if p["blocking"]] == []


async def test_a_listening_base_url_and_a_keyed_model_report_nothing(
    client_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
        client = client_for(web_app(Agent("assistant", model="openai:qwen3")))
        health = (await client.get("/api/info")).json()
    assert health["setup_problem"] is None and health["setup_hint"] is None


async def test_a_run_that_fails_before_its_checkpoint_keeps_the_message(
    client_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 17: the key went away after the startup check; the run fails before its
    checkpoint holds the message, and the message stays in the chat, marked failed, with the
    error and its fix."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    session, cp = InMemorySession(), InMemoryCheckpointer()
    app = web_app(
        Agent("assistant", model="openai:gpt-4.1"), store=ChatStore(session, checkpointer=cp)
    )
    client = client_for(app)
    found = (await client.get("/api/info")).json()["problems"]
    assert [p["agent"] for p in found if p["blocking"]] == []  # sending is open
    monkeypatch.delenv("OPENAI_API_KEY")
    sent = await client.post("/api/chat/stream", json=message("c1", "hello?"))
    assert sent.status_code == 200
    chat = (await client.get("/api/sessions/c1")).json()
    assert chat["pending"] is None
    [entry] = chat["entries"]
    assert entry["content"] == "hello?" and entry["ended"] == "failed"
    assert "no API key" in entry["ended_error"] and "OPENAI_API_KEY" in entry["ended_hint"]
