"""Sessions and checkpoints work end to end through each real provider and its SDK."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import lovia
from lovia import (
    Agent,
    CheckpointOptions,
    ImagePart,
    Provider,
    ProviderError,
    Runner,
    TextPart,
    tool,
)
from lovia.messages import user
from tests.stores.backends import Backend, backend

from .common import add, get_weather
from .dialects import Dialect
from .server import ProtocolServer

__all__ = ["backend"]  # fixtures used by name


@pytest.fixture
def stores(backend: Backend) -> tuple[Any, Any]:
    return backend.open("session"), backend.open("checkpoint")


async def test_session_history_and_checkpoints_flow_through_the_provider(
    dialect: Dialect, server: ProtocolServer, model: Provider, stores: tuple[Any, Any]
) -> None:
    """S1/C1/C8: history reaches the wire on the next run; a finished run replays offline."""
    session, cp = stores
    agent = Agent("helper", instructions="Be brief.", model=model, tools=[get_weather, add])
    server.add(
        dialect.tool_call("call_1", "get_weather", '{"city": "Paris"}'),
        dialect.text("Sunny in Paris."),
        dialect.tool_call("call_2", "add", '{"a": 2, "b": 3}'),
        dialect.text("It is 5."),
    )

    first = await Runner.run(
        agent,
        "Weather in Paris?",
        session=session,
        session_id="chat",
        checkpoint=CheckpointOptions(cp, run_id="run-1"),
    )
    second = await Runner.run(
        agent,
        "And 2+3?",
        session=session,
        session_id="chat",
        checkpoint=CheckpointOptions(cp, run_id="run-2"),
    )

    assert (first.output, second.output) == ("Sunny in Paris.", "It is 5.")
    wire = json.dumps(server.requests[2].body)
    for seen in ("Weather in Paris?", "call_1", "sunny in Paris", "Sunny in Paris.", "And 2+3?"):
        assert seen in wire
    segments = await session.segments("chat")
    assert [s.run_id for s in segments] == ["run-1", "run-2"]
    assert segments[1].entries == second.entries
    snap = await cp.load("run-2")
    assert snap is not None and snap.status == "completed"
    assert snap.entries == second.entries

    replayed = await Runner.run(
        agent,
        "And 2+3?",
        session=session,
        session_id="chat",
        checkpoint=CheckpointOptions(cp, run_id="run-2"),
    )
    assert replayed.output == "It is 5."
    assert len(server.requests) == 4  # the replay made no model call


async def test_run_failed_by_the_provider_resumes_without_rerunning_its_tool(
    dialect: Dialect, server: ProtocolServer, model: Provider, stores: tuple[Any, Any]
) -> None:
    """C2/C10: the checkpoint holds the call and its result; resume asks the model again."""
    session, cp = stores
    ran: list[str] = []

    @tool
    def book(city: str) -> str:
        """Book a hotel."""
        ran.append(city)
        return f"booked in {city}"

    agent = Agent("helper", model=model, tools=[book], retry=None)  # the 500 fails the run
    server.add(
        dialect.tool_call("call_b", "book", '{"city": "Rome"}'),
        dialect.server_error,
        dialect.text("Booked."),
    )
    options = CheckpointOptions(cp, run_id="trip")

    with pytest.raises(ProviderError):
        await Runner.run(agent, "Book Rome", session=session, session_id="s", checkpoint=options)
    snap = await cp.load("trip")
    assert snap is not None and snap.status == "interrupted"  # a 500: a retry can fix it
    assert [e.type for e in snap.entries] == ["input", "tool_call", "tool_result"]

    result = await Runner.run(
        agent, "Book Rome", session=session, session_id="s", checkpoint=options
    )

    assert result.output == "Booked."
    assert ran == ["Rome"]
    assert "booked in Rome" in json.dumps(server.requests[2].body)
    assert [e.type for e in await session.load("s")] == [
        "input",
        "tool_call",
        "tool_result",
        "assistant_text",
    ]


async def test_a_run_with_an_image_in_its_input_resumes_and_sends_the_image_again(
    dialect: Dialect, server: ProtocolServer, model: Provider, stores: tuple[Any, Any]
) -> None:
    """The parts survive the checkpoint and the session: the resumed call and the next run
    still show the model the image, in the provider's own wire shape."""
    session, cp = stores
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(32))
    data = base64.b64encode(png).decode()
    question = user(
        [TextPart("What is in this picture?"), ImagePart.from_bytes(png, mime_type="image/png")]
    )
    agent = Agent("helper", model=model, tools=[get_weather], retry=None)  # the 500 fails it
    server.add(
        dialect.tool_call("call_w", "get_weather", '{"city": "Oslo"}'),
        dialect.server_error,
        dialect.text("A chart of Oslo."),
        dialect.text("Still the chart."),
    )
    options = CheckpointOptions(cp, run_id="look")

    with pytest.raises(ProviderError):
        await Runner.run(agent, [question], session=session, session_id="s", checkpoint=options)
    result = await Runner.run(
        agent, [question], session=session, session_id="s", checkpoint=options
    )
    again = await Runner.run(agent, "And now?", session=session, session_id="s")

    assert (result.output, again.output) == ("A chart of Oslo.", "Still the chart.")
    for request in server.requests:
        assert json.dumps(request.body).count(data) == 1  # once per call, never doubled
    stored = (await session.load("s"))[0]
    assert isinstance(stored, lovia.InputEntry) and stored.content == question.content
