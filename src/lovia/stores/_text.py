"""Text every store can keep: lone surrogates escaped, NUL kept out of plain text columns.

UTF-8 cannot encode a lone surrogate (``"\\udcff"``: a tool's output decoded with
``surrogateescape``, a model sending half an emoji), so every store, the in-memory ones
included, writes each one as the six characters of its escape (``\\udcff``) instead of
failing the save. NUL is stored as is inside JSON (which escapes it); a plain text column
(a session's title) gets it escaped as ``\\u0000``, since PostgreSQL's text cannot hold it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from pydantic_core import PydanticSerializationError

from .._transcript_entries import _ENTRIES
from ..transcript import (
    ToolResultEntry,
    TranscriptEntry,
    entries_to_json,
    entry_from_dict,
    entry_to_dict,
)
from .checkpoint import RunHead

__all__ = [
    "dump_json",
    "encode_entries",
    "escape_entries",
    "escape_head",
    "escape_meta",
    "escape_text",
    "plain_text",
    "restore_raw",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_text(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\udcff``)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape, text)
    return text


def plain_text(text: str | None) -> str | None:
    """Text for a plain column: surrogates escaped and NUL written as ``\\u0000``."""
    if text is None:
        return None
    return escape_text(text).replace("\x00", "\\u0000")


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, dict):
        return {escape_text(str(k)): _walk(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v) for v in value]
    return value


def _encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return False
    except (TypeError, ValueError):
        return True  # not JSON at all: the caller's own check reports it
    return True


def escape_meta(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """Segment ``meta`` with lone surrogates escaped (the same object when there are none)."""
    if meta is None or _encodable(meta):
        return meta
    escaped: dict[str, Any] = _walk(meta)
    return escaped


def escape_entries(entries: Sequence[TranscriptEntry]) -> list[TranscriptEntry]:
    """``entries`` with lone surrogates escaped in every text (unchanged entries reused)."""
    try:
        entries_to_json(entries)  # one fast pass: nearly always there is nothing to escape
    except PydanticSerializationError:
        pass
    else:
        return list(entries)
    out: list[TranscriptEntry] = []
    for entry in entries:
        data = entry_to_dict(entry)
        out.append(entry if _encodable(data) else entry_from_dict(_walk(data)))
    return out


def escape_head(head: RunHead) -> RunHead:
    """``head`` with lone surrogates escaped in its texts (the same head when there are none)."""
    data = head.to_dict()
    return head if _encodable(data) else RunHead.from_dict(_walk(data))


def encode_entries(entries: Sequence[TranscriptEntry]) -> bytes:
    """``entries_to_json``, escaping lone surrogates instead of failing on them.

    A tool result whose ``raw`` is its ``output`` (every tool returning ``str``) is stored
    without ``raw``, so its text is stored, read and parsed once; ``restore_raw`` puts it
    back after decoding.
    """
    try:
        return _dump(entries)
    except PydanticSerializationError:
        return _dump(escape_entries(entries))


def _dump(entries: Sequence[TranscriptEntry]) -> bytes:
    items = list(entries)
    same = {
        i: _RAW
        for i, e in enumerate(items)
        if type(e) is ToolResultEntry and type(e.raw) is str and e.raw == e.output
    }
    return _ENTRIES.dump_json(items, exclude=same) if same else _ENTRIES.dump_json(items)


_RAW = {"raw"}


def restore_raw(entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    """Decoded ``entries`` with a tool result stored without ``raw`` given its ``output``
    as ``raw`` again (see ``encode_entries``); a stored ``"raw": null`` stays ``None``."""
    for e in entries:
        if type(e) is ToolResultEntry:
            fields = e.__pydantic_fields_set__
            if "raw" not in fields:
                e.__dict__["raw"] = e.output  # as object.__setattr__ would, frozen or not
                fields.add("raw")
    return entries


def dump_json(value: Any) -> str:
    """``value`` as JSON text UTF-8 can hold (lone surrogates escaped); ``TypeError`` or
    ``ValueError`` when it is not JSON."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(_walk(value), ensure_ascii=False, allow_nan=False)
    return text
