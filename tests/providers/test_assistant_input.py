"""An assistant-role ``InputEntry`` (a conversation seeded on the model's side) reaches both
wires as an assistant message, from the run's input and from a SQLite session (issue 12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import Agent, InputEntry, Provider, Runner, SQLiteSession

from .dialects import Dialect
from .server import ProtocolServer

SEED = InputEntry(role="assistant", content="Earlier I said: the answer is 42.")


def _roles_and_texts(dialect: Dialect, body: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for m in body["messages"]:
        content = m["content"]
        if isinstance(content, list):
            content = "".join(block.get("text", "") for block in content)
        out.append((m["role"], content))
    return out


async def test_an_assistant_input_is_sent_as_an_assistant_message(
    dialect: Dialect, server: ProtocolServer, model: Provider
) -> None:
    server.add(dialect.text("Still 42."))
    history = [InputEntry(role="user", content="What is the answer?"), SEED]
    history.append(InputEntry(role="user", content="Say it again."))

    result = await Runner.run(Agent("helper", model=model), history)

    assert result.output == "Still 42."
    sent = _roles_and_texts(dialect, server.requests[0].body)
    assert sent[-3:] == [
        ("user", "What is the answer?"),
        ("assistant", "Earlier I said: the answer is 42."),
        ("user", "Say it again."),
    ]


async def test_an_assistant_input_stored_in_a_sqlite_file_is_sent_on_the_next_run(
    dialect: Dialect, server: ProtocolServer, model: Provider, tmp_path: Path
) -> None:
    path = tmp_path / "chat.db"
    await SQLiteSession(path).append(
        "c1", [InputEntry(role="user", content="What is the answer?"), SEED], run_id="seed"
    )
    server.add(dialect.text("42."))

    reopened = SQLiteSession(path)
    await Runner.run(Agent("helper", model=model), "Again?", session=reopened, session_id="c1")

    loaded = await SQLiteSession(path).load("c1")
    assert [(e.type, getattr(e, "role", None)) for e in loaded][:3] == [
        ("input", "user"),
        ("input", "assistant"),
        ("input", "user"),
    ]
    assert _roles_and_texts(dialect, server.requests[0].body)[-3:] == [
        ("user", "What is the answer?"),
        ("assistant", "Earlier I said: the answer is 42."),
        ("user", "Again?"),
    ]
