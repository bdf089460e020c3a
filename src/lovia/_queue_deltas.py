"""Token streaming of a queued run: a worker's text deltas reach the web server's page.

A worker driving a watched run (``park``: a page follows it) sends its text deltas as
notifications on the queue's channel, batched: one statement in flight per run, carrying
everything buffered meanwhile, each notice at most ``CHUNK_CHARS`` characters (NOTIFY's
payload limit is 8000 bytes). The buffer is bounded (``BUFFER_CHARS``): past it, while the
database is slow, deltas are dropped, and the follower sees the gap in their numbers.

The follower (``stream_run``) yields the deltas of the turn being written as they come, and
squares them with the checkpoint when the turn is saved: the text a gap, a lost notice or a
crashed worker left out is sent then as one delta (after ``output_discarded`` when what was
shown is not the saved text's start), so the page ends with exactly the saved text, as with
a run in the web server. Deltas only hasten the text: the checkpoint stays the truth.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger("lovia.workers")

CHUNK_CHARS = 600
"""Characters of text per notice: a character's JSON escape takes at most 12 bytes (an emoji,
two ``\\uXXXX``), so a notice stays under NOTIFY's 8000 bytes whatever the text."""

BUFFER_CHARS = 64_000
"""Characters a worker holds for one run while its notices are slower than its tokens."""

Send = Callable[[list[str]], Awaitable[None]]
"""Sends notice payloads, in order, in one round trip."""


def delta_payload(key: str, turn: int, seq: int, text: str) -> str:
    return json.dumps({"r": key, "t": turn, "s": seq, "d": text}, separators=(",", ":"))


def parse_delta(payload: str, key: str) -> tuple[int, int, str] | None:
    """``(turn, seq, text)`` of a delta notice of the run ``key`` names, else ``None``."""
    if not payload.startswith("{"):
        return None
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("r") != key:
        return None
    turn, seq, text = data.get("t"), data.get("s"), data.get("d")
    if not isinstance(turn, int) or not isinstance(seq, int) or not isinstance(text, str):
        return None
    return turn, seq, text


class DeltaSender:
    """A worker's deltas of one run, sent in order with one send in flight at a time."""

    def __init__(self, key: str, send: Send) -> None:
        self.key = key
        self._send = send
        self._turn = 0
        self._seq = 0
        self._chunks: list[tuple[int, int, str]] = []  # (turn, seq, text) not sent yet
        self._held = 0
        self._task: asyncio.Task[None] | None = None

    def see(self, event: Any) -> None:
        """Take a run event: ``turn_started`` numbers the deltas after it, ``text_delta``
        is buffered (and its send started when none is in flight)."""
        kind = getattr(event, "type", None)
        if kind == "turn_started":
            self._turn, self._seq = int(event.turn), 0
        elif kind == "output_discarded":
            self._seq = 0  # a retried model call: the follower drops what it showed
        elif kind == "text_delta" and event.delta:
            text = str(event.delta)
            for start in range(0, len(text), CHUNK_CHARS):  # one long delta: several notices
                self._add(text[start : start + CHUNK_CHARS])

    def _add(self, text: str) -> None:
        if self._held + len(text) > BUFFER_CHARS:
            self._seq += 1  # dropped: the follower sees the gap and waits for the checkpoint
            return
        last = self._chunks[-1] if self._chunks else None
        if last is not None and last[0] == self._turn and len(last[2]) + len(text) <= CHUNK_CHARS:
            self._chunks[-1] = (last[0], last[1], last[2] + text)
        else:
            self._chunks.append((self._turn, self._seq, text))
            self._seq += 1
        self._held += len(text)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        while self._chunks:
            chunks, self._chunks, self._held = self._chunks, [], 0
            try:
                await self._send([delta_payload(self.key, *c) for c in chunks])
            except Exception as exc:  # the checkpoint carries the text all the same
                log.info("deltas of %s not sent: %s", self.key, exc)

    async def flush(self) -> None:
        """Wait until what was buffered is sent (before the step that saves the turn is
        announced, so the page shows the tokens before the whole message)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def close(self) -> None:
        """Stop sending: the run ended (each turn's tokens went out before its step's
        notice), or was cut short, when a stalled send must not hold it."""
        task, self._task = self._task, None
        self._chunks.clear()
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


class DeltaFollower:
    """The follower's side: which deltas to show, and the text to add when a turn is saved."""

    def __init__(self, key: str, saved_turns: int) -> None:
        self.key = key
        self.saved_turns = saved_turns  # turns the follower has shown from the checkpoint
        self._shown: dict[int, str] = {}  # turn -> text shown by deltas
        self._next: dict[int, int] = {}  # turn -> the seq expected next (-1: a gap)

    def on_notice(self, payload: str) -> list[dict[str, Any]] | None:
        """The events a notice brings: ``None`` when it is no delta of this run (a state
        change or a saved step: the checkpoint is read)."""
        parsed = parse_delta(payload, self.key)
        if parsed is None:
            return None
        turn, seq, text = parsed
        if turn <= self.saved_turns:
            return []  # that turn was shown whole from the checkpoint
        events: list[dict[str, Any]] = []
        expected = self._next.get(turn, 0)
        if seq == 0 and expected > 0:  # the turn written again (another worker, a retry)
            events.append({"type": "output_discarded"})
            self._shown[turn], expected = "", 0
        if seq != expected:
            self._next[turn] = -1  # a gap: the rest comes with the checkpoint
            return events
        self._next[turn] = seq + 1
        self._shown[turn] = self._shown.get(turn, "") + text
        events.append({"type": "text_delta", "delta": text})
        return events

    def saved(self, events: list[dict[str, Any]], turns: int) -> list[dict[str, Any]]:
        """``events`` (``step_events`` of the checkpoint, up to ``turns`` saved turns) with
        each turn's text that deltas did not show sent before its ``message_completed``."""
        out: list[dict[str, Any]] = []
        turn = self.saved_turns
        for event in events:
            if event.get("type") == "message_completed" and turn < turns:
                turn += 1
                full = "".join(
                    str(e.get("content") or "")
                    for e in event.get("entries") or []
                    if e.get("type") == "assistant_text"
                )
                shown = self._shown.pop(turn, "")
                self._next.pop(turn, None)
                if full.startswith(shown):
                    if full[len(shown) :]:
                        out.append({"type": "text_delta", "delta": full[len(shown) :]})
                else:
                    out.append({"type": "output_discarded"})
                    if full:
                        out.append({"type": "text_delta", "delta": full})
            out.append(event)
        self.saved_turns = max(self.saved_turns, turns)
        for old in [t for t in self._shown if t <= self.saved_turns]:
            del self._shown[old]
        return out
