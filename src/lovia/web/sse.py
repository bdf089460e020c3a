"""Server-sent events: lovia run events as ``text/event-stream`` frames, and back.

One frame per event: ``id`` is the event's position in its run (1-based, so a reconnecting
client sends ``Last-Event-ID`` or ``?after=N`` and gets what it missed), ``event`` is the
event's ``type``, ``data`` its ``to_dict()`` as one line of JSON.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["decode_sse", "encode_comment", "encode_sse"]


def encode_sse(seq: int, event: dict[str, Any]) -> bytes:
    """One SSE frame for the ``seq``-th event of a run (``event`` as ``RunEvent.to_dict()``)."""
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str)
    kind = _one_line(str(event.get("type", "message")))
    return f"id: {seq}\nevent: {kind}\ndata: {data}\n\n".encode()


def encode_comment(text: str) -> bytes:
    """A comment frame (ignored by clients; keeps idle connections open)."""
    return f": {_one_line(text)}\n\n".encode()


def _one_line(text: str) -> str:
    # CR, LF and CRLF all end an SSE line: a run id with one must not start a frame
    return text.replace("\r", " ").replace("\n", " ")


def decode_sse(body: str) -> list[tuple[int, dict[str, Any]]]:
    """Parse frames written by ``encode_sse`` into ``(seq, event)`` pairs (comments skipped)."""
    out: list[tuple[int, dict[str, Any]]] = []
    for frame in body.replace("\r\n", "\n").split("\n\n"):
        seq: int | None = None
        data: list[str] = []
        for line in frame.split("\n"):
            if line.startswith("id:"):
                seq = int(line[3:].strip())
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if seq is not None and data:
            out.append((seq, json.loads("\n".join(data))))
    return out
