"""A segment's `meta` is opaque per-run data, a `dict | None`: what is not a dict is refused
before anything is written, and a run reading history whose `meta` it does not understand
goes on, as lovia 0.9.119's runs did."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import Agent, Runner, Segment, UserError
from lovia.testing import ScriptedProvider, text
from lovia.transcript import AssistantTextEntry, InputEntry, TranscriptEntry

RUN = [InputEntry(role="user", content="my project is Atlas"), AssistantTextEntry(content="ok")]


@pytest.mark.parametrize("meta", [["context_state"], "ended", 3])
async def test_meta_that_is_not_a_dict_is_refused_and_nothing_is_stored(
    stores: Any, meta: Any
) -> None:
    session, _cp = stores
    await session.append("u1", RUN, run_id="first")
    with pytest.raises(UserError) as caught:
        await session.append("u1", RUN, run_id="second", meta=meta)
    assert isinstance(caught.value, TypeError) and caught.value.hint
    assert [s.run_id for s in await session.segments("u1")] == ["first"]
    # the session stays readable and usable
    agent = Agent("a", model=ScriptedProvider([text("Atlas")]))
    done = await Runner.run(agent, "name?", session=session, session_id="u1")
    assert done.output == "Atlas" and len(await session.load("u1")) == 4


@pytest.mark.parametrize("state", [[1, 2], "compacted", 7])
async def test_a_context_state_the_policy_cannot_read_does_not_fail_the_next_run(
    stores: Any, state: Any
) -> None:
    """Another program (or an older lovia) wrote ``meta["context_state"]``: the next run
    starts without carried state instead of failing on it."""
    session, _cp = stores
    await session.append("u1", RUN, meta={"context_state": state, "source": "import"})
    model = ScriptedProvider([text("Atlas")])
    done = await Runner.run(Agent("a", model=model), "name?", session=session, session_id="u1")
    assert done.output == "Atlas"
    assert [m.content for m in model.calls[0]] == ["my project is Atlas", "ok", "name?"]
    first = (await session.segments("u1"))[0]
    assert first.meta == {"context_state": state, "source": "import"}  # never rewritten


class OddMetaSession:
    """A user's store with only the four protocol methods, whose segments carry a meta that
    is not a dict (its own bookkeeping)."""

    def __init__(self) -> None:
        self.runs: list[Segment] = []

    async def segments(self, session_id: str) -> list[Segment]:
        return [Segment(s.run_id, list(s.entries), ["mine"]) for s in self.runs]  # type: ignore[arg-type]

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        return [e for s in self.runs for e in s.entries]

    async def append(
        self,
        session_id: str,
        entries: list[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        self.runs.append(Segment(run_id or f"r{len(self.runs)}", list(entries), meta))
        return self.runs[-1].run_id

    async def clear(self, session_id: str) -> None:
        self.runs.clear()


async def test_a_custom_store_whose_meta_is_not_a_dict_still_serves_history() -> None:
    session = OddMetaSession()
    await session.append("u1", list(RUN))
    model = ScriptedProvider([text("Atlas")])
    done = await Runner.run(Agent("a", model=model), "name?", session=session, session_id="u1")
    assert done.output == "Atlas" and len(model.calls[0]) == 3
