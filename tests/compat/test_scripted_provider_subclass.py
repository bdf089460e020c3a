"""A ``ScriptedProvider`` subclass written for 0.9.119 reads ``self._script``, the turns not
played yet, to decide what its next call does (0.9.119's own web tests fail a run that way,
issue 30): it is the list of turns left, empty once the script has been played."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import Agent, tool
from lovia.exceptions import ProviderError
from lovia.testing import ScriptedProvider, call


@tool
def ping() -> str:
    """Ping."""
    return "pong"


class _ThenFail(ScriptedProvider):
    async def stream(self, entries: Any, **kwargs: Any) -> Any:
        if not self._script:
            raise ProviderError("played out")
        async for delta in super().stream(entries, **kwargs):
            yield delta


def test_script_is_the_turns_left() -> None:
    model = ScriptedProvider([call("ping", {}, call_id="c1")])
    assert len(model._script) == 1 and model._script[0] is model.script[0]


async def test_a_subclass_reading_script_fails_the_run_once_it_is_played() -> None:
    model = _ThenFail([call("ping", {}, call_id="c1")])
    with pytest.raises(ProviderError, match="played out"):
        await Agent(name="a", model=model, tools=[ping]).run("hi")
    assert model._script == [] and len(model.calls) == 1  # the failing call is not recorded
