"""A checkpoint argument of the wrong type says what to pass (C1, C3, C9), on every backend."""

from __future__ import annotations

from typing import Any

import pytest

from lovia import CheckpointOptions, InMemoryCheckpointer, InputEntry, RunHead, UserError
from tests.stores.backends import checkpoint_backend, checkpointer

__all__ = ["checkpoint_backend", "checkpointer"]  # fixtures used by name


@pytest.mark.parametrize("head", [{"agent_name": "a"}, None, "a"])
async def test_a_head_that_is_not_a_run_head_is_a_type_error_with_a_hint(
    checkpointer: Any, head: object
) -> None:
    """C3: a snapshot's head is a ``RunHead``. ``append`` given anything else raises a
    ``UserError`` that is also a ``TypeError``, with a hint, and stores nothing."""
    with pytest.raises(UserError) as info:
        await checkpointer.append("r1", [InputEntry(role="user", content="hi")], head)
    assert isinstance(info.value, TypeError)
    assert info.value.hint and "RunHead" in info.value.hint
    assert await checkpointer.load("r1") is None
    await checkpointer.append("r1", [InputEntry(role="user", content="hi")], RunHead("a"))
    assert (await checkpointer.load("r1")).agent_name == "a"


@pytest.mark.parametrize("snapshot", [{"run_id": "r1"}, "r1"])
def test_resume_from_that_is_not_a_snapshot_is_a_type_error_with_a_hint(snapshot: object) -> None:
    """C9: ``resume_from=`` takes a ``RunSnapshot`` (what ``checkpointer.load`` returns);
    anything else is refused on the ``CheckpointOptions(...)`` line with a hint."""
    with pytest.raises(UserError) as info:
        CheckpointOptions(InMemoryCheckpointer(), resume_from=snapshot)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)
    assert info.value.hint and "load" in info.value.hint
