"""``lovia.testing`` misused, found by the bad-input audit: a script that is not a list, or
an item that is no turn, says which and how to script it, instead of an error from deep in
the run (0.9.119: ``AttributeError: 'str' object has no attribute 'content'``; before this
fix, a ``ProviderError`` quoting ``TypeError: 'str' object is not callable``)."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import Agent, ProviderError, Runner, UserError
from lovia.testing import ScriptedProvider, call, text


@pytest.mark.parametrize("item", ["hello", 5, {"content": "hi"}])
def test_a_script_item_that_is_no_turn_says_how_to_script_one(item: Any) -> None:
    model = ScriptedProvider([text("first"), item])
    agent = Agent("a", model=model)
    assert Runner.run_sync(agent, "one").output == "first"
    with pytest.raises(UserError) as caught:
        Runner.run_sync(agent, "two")
    assert not isinstance(caught.value, ProviderError)  # the script is wrong, not a model
    assert isinstance(caught.value, TypeError)
    assert "script item 1" in caught.value.message and repr(item)[:5] in caught.value.message
    assert caught.value.hint and "text(" in caught.value.hint


@pytest.mark.parametrize("script", [text("Done."), call("f", {}), "Done."])
def test_one_turn_instead_of_a_list_says_to_pass_a_list(script: Any) -> None:
    with pytest.raises(TypeError) as caught:  # a TypeError, as before
        ScriptedProvider(script)
    assert isinstance(caught.value, UserError)
    assert caught.value.hint and "ScriptedProvider([" in caught.value.hint
