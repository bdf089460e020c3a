"""The entries a store is asked to write, checked before any I/O.

A value that is not a transcript entry (``None``, a string, one entry not in a list) used to
be written as it came: the built-in SQL stores then held a row that no read could decode,
and every later read of that session or run raised ``StoreError``. Such a call is now a
``UserError`` that writes nothing; a dict is read with ``entry_from_dict``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._transcript_entries import _ENTRY_TYPES
from ..errors import UserError, UserTypeError
from ..transcript import TranscriptEntry, entry_from_dict

__all__ = ["checked_entries", "checked_meta"]

_HINT = "pass a list of lovia.transcript entries (InputEntry, ToolCallEntry, ...), [] for none"


def checked_entries(entries: Any) -> list[TranscriptEntry]:
    """``entries`` as a new list of transcript entries, or ``UserError``."""
    if isinstance(entries, (str, bytes, dict, *_ENTRY_TYPES)) or not isinstance(entries, Iterable):
        raise UserError(
            f"entries must be a list of transcript entries, got {type(entries).__name__}",
            hint=_HINT,
        )
    out: list[Any] = list(entries)
    for i, entry in enumerate(out):
        if isinstance(entry, _ENTRY_TYPES):
            continue
        if isinstance(entry, dict):
            try:
                out[i] = entry_from_dict(entry)
            except Exception as exc:
                raise UserError(f"entry {i} is not a transcript entry: {exc}", hint=_HINT) from exc
            continue
        raise UserError(
            f"entry {i} is a {type(entry).__name__}, not a transcript entry", hint=_HINT
        )
    return out


def checked_meta(meta: Any) -> dict[str, Any] | None:
    """``meta`` if it is a dict or ``None``; a list or a string would be stored as it came
    and then refused by every read of the session (``StoreError``), so it is refused here."""
    if meta is None or isinstance(meta, dict):
        return meta
    raise UserTypeError(
        f"segment meta must be a dict or None, got {type(meta).__name__}",
        hint='pass a dict of JSON-safe values, e.g. meta={"source": "import"}',
    )
