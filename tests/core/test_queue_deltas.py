"""A worker's text deltas, as the web server that follows its run shows them: in order as
they come, a gap or a turn written again squared with the checkpoint, so the page always
ends with exactly the saved text. Pure: the notices are payload strings. Issue 34."""

from __future__ import annotations

import asyncio
from typing import Any

from lovia._queue_deltas import BUFFER_CHARS, DeltaFollower, DeltaSender, delta_payload

KEY = "lovia_run-1"


def turn(text: str) -> dict[str, Any]:
    return {"type": "message_completed", "entries": [{"type": "assistant_text", "content": text}]}


def shown(events: list[dict[str, Any]]) -> str:
    """What a page shows from ``events`` (``output_discarded`` clears the turn's text)."""
    out = ""
    for e in events:
        if e["type"] == "output_discarded":
            out = ""
        elif e["type"] == "text_delta":
            out += e["delta"]
    return out


def feed(follower: DeltaFollower, *notes: tuple[int, int, str]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for t, s, d in notes:
        events += follower.on_notice(delta_payload(KEY, t, s, d)) or []
    return events


def test_deltas_in_order_are_shown_and_the_saved_turn_adds_nothing() -> None:
    f = DeltaFollower(KEY, 0)
    events = feed(f, (1, 0, "hel"), (1, 1, "lo"))
    assert [e["delta"] for e in events] == ["hel", "lo"]
    events += f.saved([turn("hello")], 1)
    assert shown(events) == "hello"
    assert events[-1]["type"] == "message_completed"


def test_a_gap_stops_the_deltas_and_the_checkpoint_brings_the_rest() -> None:
    f = DeltaFollower(KEY, 0)
    events = feed(f, (1, 0, "a"), (1, 2, "c"), (1, 3, "d"))
    assert shown(events) == "a"
    events += f.saved([turn("abcd")], 1)
    assert shown(events) == "abcd"


def test_a_turn_written_again_discards_what_was_shown() -> None:
    f = DeltaFollower(KEY, 0)
    events = feed(f, (1, 0, "first try"), (1, 0, "sec"), (1, 1, "ond"))
    assert {"type": "output_discarded"} in events
    events += f.saved([turn("second")], 1)
    assert shown(events) == "second"


def test_late_deltas_of_a_saved_turn_are_dropped_and_other_runs_ignored() -> None:
    f = DeltaFollower(KEY, 0)
    events = f.saved([turn("whole")], 1)
    assert shown(events) == "whole"
    assert feed(f, (1, 0, "wh")) == []
    assert f.on_notice(delta_payload("lovia_run-2", 2, 0, "x")) is None
    assert f.on_notice(KEY) is None  # a state notice: the checkpoint is read


def test_a_shown_text_that_is_not_the_saved_one_is_replaced() -> None:
    f = DeltaFollower(KEY, 0)
    events = feed(f, (1, 0, "draft"))
    events += f.saved([turn("final")], 1)
    assert shown(events) == "final"


class Turn:
    type = "turn_started"

    def __init__(self, turn: int) -> None:
        self.turn = turn


class Delta:
    type = "text_delta"

    def __init__(self, delta: str) -> None:
        self.delta = delta


async def test_a_worker_sends_its_deltas_in_order_batched_and_a_follower_shows_them() -> None:
    sent: list[list[str]] = []
    gate = asyncio.Event()

    async def send(payloads: list[str]) -> None:
        sent.append(payloads)
        await gate.wait()  # a slow database: what comes meanwhile waits for one send

    sender = DeltaSender(KEY, send)
    sender.see(Turn(1))
    for word in ["one ", "two ", "three"]:
        sender.see(Delta(word))
        await asyncio.sleep(0)
    gate.set()
    await sender.flush()
    assert len(sent) == 2  # the first delta, then the two that came while it was sent
    follower = DeltaFollower(KEY, 0)
    events = [e for batch in sent for p in batch for e in follower.on_notice(p) or []]
    assert shown(events) == "one two three"
    await sender.close()


async def test_past_its_bound_a_worker_drops_deltas_and_the_follower_waits_for_the_turn() -> None:
    sent: list[str] = []
    gate = asyncio.Event()

    async def send(payloads: list[str]) -> None:
        await gate.wait()
        sent.extend(payloads)

    sender = DeltaSender(KEY, send)
    sender.see(Turn(1))
    big = "x" * 1000
    for _ in range(BUFFER_CHARS // 1000 + 5):
        sender.see(Delta(big))
        await asyncio.sleep(0)
    sender.see(Delta("tail"))
    gate.set()
    await sender.flush()
    follower = DeltaFollower(KEY, 0)
    events = [e for p in sent for e in follower.on_notice(p) or []]
    assert len(shown(events)) < BUFFER_CHARS + 2000  # bounded, and the gap stops the deltas
    full = big * (BUFFER_CHARS // 1000 + 5) + "tail"
    assert shown(events + follower.saved([turn(full)], 1)) == full
    await sender.close()
