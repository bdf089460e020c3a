"""A chat stream: one response that follows a chat's runs from one to the next.

It starts with ``session`` (a new stream) or ``session`` and ``snapshot`` (joining a live
run, or reconnecting), then each event of the run. A run that parks for an approval does not
end the stream: it goes on with the run the decision resumes (``POST /api/chat/approve``). A
run followed at once by the run that answers messages sent too late for it goes on with that
run, its message shown as ``user_injected``. Comment lines keep an idle stream open.
"""

from __future__ import annotations

import asyncio
import string
import weakref
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

from fastapi.responses import StreamingResponse

from ..chats.supervisor import LiveRun, RunSupervisor
from .wire import encode, frames

__all__ = ["KEEPALIVE", "chat_stream", "follow_chat", "header_text"]

KEEPALIVE = 15.0
"""Seconds between comment lines on a stream that has nothing to say."""

STORE_POLL = 1.0
"""Seconds between two looks at the store while a stream waits for a parked run's decision
(this server's own runs are seen at once; a decision another server took, within this)."""

# The wire bytes of each live run's events, by event number: encoded once, however many
# streams follow the run (a hundred followers cost a hundred socket writes, not a hundred
# JSON encodings of each event). Dropped with the run.
_ENCODED: weakref.WeakKeyDictionary[LiveRun, dict[int, bytes]] = weakref.WeakKeyDictionary()

_HEADER_SAFE = string.punctuation.replace("%", "")


def header_text(value: str) -> str:
    """``value`` as a header may carry it: printable ASCII as it is, anything else
    percent-encoded as UTF-8 (a run id a program chose may hold anything)."""
    return quote(value, safe=_HEADER_SAFE)


def _parked(terminal: dict[str, Any]) -> bool:
    error = terminal.get("error") or {}
    return terminal.get("type") == "run_failed" and error.get("type") == "ApprovalPending"


async def _next_run(sup: RunSupervisor, chat_id: str, ended: LiveRun) -> LiveRun | None:
    """The chat's next live run after ``ended``, once one starts (``None`` when the chat
    moved on otherwise: the parked run was settled, or the server is closing)."""
    ticks = 0
    while True:
        if ended.resumed_by is not None:  # resumed here (maybe over already)
            return ended.resumed_by
        live = sup.live.get(chat_id)
        if live is not None and live is not ended:
            return live
        if sup.closing:
            return None
        if sup.busy_here(chat_id):  # a decision is being written, its run about to start
            await asyncio.sleep(0.05)
            continue
        if ticks % int(STORE_POLL / 0.05) == 0:  # one store read a second, per stream
            head = await sup.chats.pending_head(chat_id)
            if head is None or head.run_id != ended.run_id:
                if ended.resumed_by is not None:
                    return ended.resumed_by
                live = sup.live.get(chat_id)
                return live if live is not None and live is not ended else None
        ticks += 1
        await asyncio.sleep(0.05)


def _wire(run: LiveRun, seq: int, event: dict[str, Any]) -> bytes:
    """The frames of ``run``'s event number ``seq``, encoded once for every follower."""
    cache = _ENCODED.get(run)
    if cache is None:
        cache = _ENCODED[run] = {}
    data = cache.get(seq)
    if data is None:
        event_id = f"{run.run_id}:{seq}"
        data = cache[seq] = b"".join(
            encode(name, payload, event_id) for name, payload in frames(event, run.run_id)
        )
    return data


async def follow_chat(
    sup: RunSupervisor, chat_id: str, run: LiveRun, after: int = 0
) -> AsyncIterator[bytes]:
    """The frames of ``run`` from its event ``after + 1`` on, then of the runs that follow it
    in this chat (a resumed approval, an answer to late messages)."""
    current: LiveRun | None = run
    while current is not None:
        terminal: dict[str, Any] = {}
        async for seq, event in current.follow(after):
            if event.get("type") in ("run_completed", "run_failed"):
                terminal = event
                break
            data = _wire(current, seq, event)
            if data:
                yield data
        after = 0
        ended, current = current, None
        if _parked(terminal):
            # durable now: the calls wait in the run's checkpoint, for any server to decide
            yield encode("parked", {"run_id": ended.run_id}, f"{ended.run_id}:{len(ended.events)}")
            waiting = asyncio.ensure_future(_next_run(sup, chat_id, ended))
            while not waiting.done():
                done, _ = await asyncio.wait({waiting}, timeout=KEEPALIVE)
                if not done:
                    yield b": waiting for a decision\n\n"
            current = waiting.result()
            if current is not None:
                continue
        for name, data in frames(terminal, ended.run_id):
            yield encode(name, data, f"{ended.run_id}:{len(ended.events)}")
        follow_up = ended.next_run
        if terminal.get("next_run_id") and follow_up is not None:
            current = follow_up
            if follow_up.input_text:
                yield encode("user_injected", {"content": follow_up.input_text, "turn": 1})


def chat_stream(
    sup: RunSupervisor,
    chat_id: str,
    run: LiveRun,
    *,
    head: list[tuple[str, Any]],
    after: int = 0,
    joined: bool = False,
) -> StreamingResponse:
    """The SSE response: the ``head`` frames, then ``follow_chat``."""

    async def body() -> AsyncIterator[bytes]:
        for name, data in head:
            yield encode(name, data)
        async for frame in follow_chat(sup, chat_id, run, after):
            yield frame

    headers = {
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",
        "X-Lovia-Run-Id": header_text(run.run_id),
    }
    if joined:
        headers["X-Lovia-Joined"] = "1"
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)
