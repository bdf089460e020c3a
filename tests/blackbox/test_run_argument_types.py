"""Arguments of the wrong type to `Runner.run`: a `UserError` (also a `TypeError`) with a hint,
raised before anything is stored, and the stream of such a run is one `RunFailed`."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    UserError,
    events,
)
from lovia.testing import ScriptedProvider, text

BAD_INPUT = [None, 5, {"role": "user", "content": "hi"}, b"hi"]
BAD_OPTIONS: list[dict[str, Any]] = [
    {"budget": {"max_tool_calls": 3}},
    {"cancel_token": "stop"},
    {"mailbox": ["focus on 14:00"]},
    {"tracer": "console"},
]


@pytest.mark.parametrize("given", BAD_INPUT, ids=repr)
async def test_input_that_is_neither_a_string_nor_a_list_is_refused(given: Any) -> None:
    cp = InMemoryCheckpointer()
    model = ScriptedProvider([text("never")])
    with pytest.raises(UserError) as caught:
        await Runner.run(Agent("a", model=model), given, checkpoint=CheckpointOptions(cp, "job"))
    assert isinstance(caught.value, TypeError)
    assert type(given).__name__ in caught.value.message and "list" in (caught.value.hint or "")
    assert await cp.load("job") is None and model.calls == []


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=lambda o: next(iter(o)))
async def test_an_option_of_the_wrong_type_is_refused_before_the_run_starts(
    options: dict[str, Any],
) -> None:
    cp = InMemoryCheckpointer()
    model = ScriptedProvider([text("never")])
    with pytest.raises(UserError) as caught:
        await Runner.run(
            Agent("a", model=model), "hi", checkpoint=CheckpointOptions(cp, "job"), **options
        )
    name = next(iter(options))
    assert isinstance(caught.value, TypeError) and name in caught.value.message
    assert caught.value.hint and await cp.load("job") is None and model.calls == []
    handle = Runner.stream(Agent("a", model=model), "hi", **options)
    seen = [type(e) async for e in handle]
    assert seen == [events.RunFailed]
    with pytest.raises(UserError):
        await handle.result()


async def test_a_list_of_message_dicts_is_still_input() -> None:
    model = ScriptedProvider([text("ok")])
    done = await Runner.run(Agent("a", model=model), [{"role": "user", "content": "hi"}])
    assert done.output == "ok" and [m.content for m in model.calls[0]] == ["hi"]


@pytest.mark.parametrize(
    "store", [InMemorySession, SQLiteSession, InMemoryCheckpointer, SQLiteCheckpointer]
)
async def test_a_store_class_given_for_a_store_is_refused_with_a_hint(store: type) -> None:
    """S1/C1 and api.md's errors: ``session=SQLiteSession`` (the class, a forgotten ``(...)``)
    was a TypeError from inside the run about a missing argument of a method the caller
    never called; now it is a UserError naming the class, with the line to write."""
    model = ScriptedProvider([text("never")])
    agent = Agent("a", model=model)
    with pytest.raises(UserError) as caught:
        if store in (InMemorySession, SQLiteSession):
            await Runner.run(agent, "hi", session=store, session_id="u1")
        else:
            await Runner.run(agent, "hi", checkpoint=CheckpointOptions(store, "job"))
    assert store.__name__ in caught.value.message
    assert f"{store.__name__}(" in (caught.value.hint or "") and model.calls == []
