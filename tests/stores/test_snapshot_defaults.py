"""What a stored head or snapshot dict that lacks the optional fields loads as, and the run
ids ``CheckpointOptions`` refuses (both as lovia 0.9.119)."""

from __future__ import annotations

import time

import pytest

from lovia import CheckpointOptions, InMemoryCheckpointer, RunHead, RunSnapshot, UserError


def test_a_snapshot_dict_with_only_the_required_fields_gets_the_defaults() -> None:
    before = time.time()
    snap = RunSnapshot.from_dict(
        {"run_id": "r", "entries": [], "agent_name": "a", "status": "running"}
    )
    after = time.time()
    assert (snap.turns, snap.usage.total_tokens, snap.output, snap.error) == (0, 0, None, None)
    assert (snap.last_input_tokens, snap.context_state, snap.pending_handoff) == (None, {}, None)
    # a head without a time is stamped with the time it is read
    assert before <= snap.updated_at <= after


def test_a_head_dict_without_updated_at_is_stamped_when_read_and_a_stored_time_is_kept() -> None:
    before = time.time()
    head = RunHead.from_dict({"agent_name": "a"})
    assert before <= head.updated_at <= time.time()
    assert RunHead.from_dict({"agent_name": "a", "updated_at": 12.5}).updated_at == 12.5


@pytest.mark.parametrize("run_id", ["", " ", "\n", "\t  "])
def test_a_blank_run_id_is_refused_with_a_hint(run_id: str) -> None:
    with pytest.raises(UserError, match="non-empty") as info:
        CheckpointOptions(InMemoryCheckpointer(), run_id)
    assert info.value.hint


def test_a_run_id_with_spaces_around_it_is_kept_as_given() -> None:
    assert CheckpointOptions(InMemoryCheckpointer(), " a ").run_id == " a "
