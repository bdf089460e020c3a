"""Two rules every agent's plugins follow: a name is an identity (no two alike), and a
broken view injector costs its reminder, never the run."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from lovia import Agent, RunContext, Runner, UserError
from lovia.plugins import PluginInstance
from lovia.testing import ScriptedProvider, text
from lovia.transcript import InputEntry


class Reminder:
    def __init__(self, name: str, *injectors: Any) -> None:
        self.name = name
        self.injectors = list(injectors)
        self.setups = 0

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        self.setups += 1
        return PluginInstance(view_injectors=list(self.injectors))


def note(marker: str) -> Any:
    def inject(ctx: RunContext[Any]) -> list[InputEntry]:
        return [InputEntry(role="user", content=marker)]

    return inject


async def test_two_plugins_with_one_name_are_refused_before_any_setup() -> None:
    first, second = Reminder("notes"), Reminder("notes")
    model = ScriptedProvider([text("hi")])
    agent = Agent(name="a", model=model, plugins=[first, second])
    with pytest.raises(UserError, match="Duplicate plugin name 'notes'") as info:
        await Runner.run(agent, "go")
    assert info.value.hint
    assert (first.setups, second.setups) == (0, 0)
    assert model.calls == []


async def test_a_raising_injector_is_skipped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken(ctx: RunContext[Any]) -> list[InputEntry]:
        raise RuntimeError("injector blew up")

    async def broken_async(ctx: RunContext[Any]) -> list[InputEntry]:
        raise ValueError("async injector blew up")

    model = ScriptedProvider([text("hi")])
    agent = Agent(
        name="a",
        model=model,
        plugins=[Reminder("bad", broken, note("KEEP-1")), Reminder("also", broken_async)],
    )
    with caplog.at_level(logging.WARNING, logger="lovia.plugins"):
        result = await Runner.run(agent, "go")
    assert result.output == "hi"
    assert any(m.content == "KEEP-1" for m in model.calls[0])  # its sibling still injects
    failures = [r for r in caplog.records if "view injector" in r.getMessage()]
    assert len(failures) == 2 and all(r.exc_info for r in failures)
