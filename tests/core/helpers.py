"""Small builders shared by the core tests."""

from __future__ import annotations

from typing import Any

from lovia import Agent
from lovia.events import RunEvent
from lovia.testing import ScriptedProvider


def agent_with(script: list[Any], **kwargs: Any) -> tuple[Agent, ScriptedProvider]:
    model = ScriptedProvider(script)
    kwargs.setdefault("name", "assistant")
    return Agent(model=model, **kwargs), model


def types(events: list[RunEvent]) -> list[str]:
    return [e.type for e in events]
