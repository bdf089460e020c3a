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
from ..errors import UserTypeError, UserValueError
from ..transcript import TranscriptEntry, entry_from_dict

__all__ = ["check_count", "checked_entries", "checked_meta"]

_HINT = "pass a list of lovia.transcript entries (InputEntry, ToolCallEntry, ...), [] for none"


def checked_entries(entries: Any) -> list[TranscriptEntry]:
    """``entries`` as a new list of transcript entries, or ``UserTypeError`` (a
    ``TypeError``, as 0.9.119's stores raised for such a value)."""
    if isinstance(entries, (str, bytes, dict, *_ENTRY_TYPES)) or not isinstance(entries, Iterable):
        raise UserTypeError(
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
                raise UserTypeError(
                    f"entry {i} is not a transcript entry: {exc}", hint=_HINT
                ) from exc
            continue
        raise UserTypeError(
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


def check_count(value: Any, name: str) -> int:
    """``value`` as a non-negative int; a ``UserError`` otherwise (``bool`` is refused on
    purpose), which is also the ``TypeError`` / ``ValueError`` 0.9.119's callers catch."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserTypeError(
            f"{name} must be a non-negative int, got {value!r}",
            hint=f"pass {name} as a whole number like 0, 1 or 400",
        )
    if value < 0:
        raise UserValueError(f"{name} must be >= 0, got {value}", hint=f"pass {name} >= 0")
    return value
