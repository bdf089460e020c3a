"""Stored JSON text for the SQL stores: segments, run heads and checkpoint batches.

``SQLiteSession`` / ``PostgresSession`` and ``SQLiteCheckpointer`` / ``PostgresCheckpointer``
keep the same columns, so encoding them and turning a row that does not decode into a
``StoreError`` naming the session and run is written once, here, as is the one query both
session stores answer ``list_sessions`` with. ``backup`` in the messages is what the user
restores: ``"file"`` for SQLite, ``"database"`` for PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import StoreError, UserError
from ..transcript import TranscriptEntry, entries_from_json
from ._text import dump_json, encode_entries, plain_text, restore_raw
from .checkpoint import RunHead, RunSnapshot
from .maintenance import title_of

__all__ = [
    "LIST_SESSIONS",
    "SegmentColumns",
    "decode_batches",
    "decode_segment",
    "decode_snapshot",
    "encode_head",
    "encode_meta",
    "encode_segment",
]

SegmentColumns = tuple[str, str | None, int, str | None]
"""A segment row's ``entries``, ``meta``, ``n_entries`` and ``title`` columns."""

# one row per non-empty session, in ``maintenance.session_info`` order; the title is the
# first run's that has one
LIST_SESSIONS = (
    "SELECT s.session_id, COUNT(*), SUM(s.n_entries), MIN(s.created_at), "
    "MAX(s.updated_at), (SELECT t.title FROM {session_segments} t "
    "WHERE t.session_id = s.session_id AND t.title IS NOT NULL "
    "ORDER BY t.seq LIMIT 1), (SELECT f.meta FROM {session_segments} f "
    "WHERE f.session_id = s.session_id ORDER BY f.seq LIMIT 1) "
    "FROM {session_segments} s GROUP BY s.session_id "
    "ORDER BY MAX(s.updated_at) DESC, s.session_id"
)


def encode_meta(meta: dict[str, Any] | None) -> str | None:
    """``meta`` as JSON text (``None`` stays ``None``); ``UserError`` when JSON cannot hold it."""
    if meta is None:
        return None
    try:
        return dump_json(meta)
    except (TypeError, ValueError) as exc:
        raise UserError(
            f"segment meta is not JSON-safe: {exc}",
            hint="keep meta to dicts, lists, strings, numbers, booleans and None",
        ) from exc


def encode_segment(
    entries: Sequence[TranscriptEntry], meta: dict[str, Any] | None
) -> SegmentColumns:
    """The columns a segment row stores besides its keys and times."""
    text = encode_entries(entries).decode()
    return text, encode_meta(meta), len(entries), plain_text(title_of(entries))


def decode_segment(
    session_id: str, run_id: str, data: str, meta_text: str | None, *, backup: str
) -> tuple[list[TranscriptEntry], dict[str, Any] | None]:
    """One stored segment's entries and meta; a row that does not decode is an error, never
    skipped."""
    try:
        entries = restore_raw(entries_from_json(data))
        meta = json.loads(meta_text) if meta_text is not None else None
    except (ValidationError, ValueError) as exc:
        detail = exc.errors()[0].get("msg") if isinstance(exc, ValidationError) else str(exc)
        raise StoreError(
            f"session {session_id!r}, run {run_id!r}: the stored segment does not decode: {detail}",
            hint="the row was written by other code or damaged; clear the session "
            "(session.clear(session_id), or 'lovia sessions clear ID') or restore the "
            f"{backup} from a backup",
        ) from exc
    if meta is not None and not isinstance(meta, dict):
        raise StoreError(
            f"session {session_id!r}, run {run_id!r}: stored meta is not an object",
            hint="clear the session (session.clear(session_id), or 'lovia sessions clear ID') "
            f"or restore the {backup} from a backup",
        )
    return entries, meta


def encode_head(run_id: str, head: RunHead) -> str:
    """``head`` as JSON text; ``StoreError`` (nothing written yet) when JSON cannot hold it."""
    try:
        return dump_json(head.to_dict())
    except (TypeError, ValueError) as exc:
        raise StoreError(
            f"cannot checkpoint run {run_id!r}: its head does not fit JSON ({exc})",
            hint="keep RunHead.output and context_state to JSON values (str, numbers, "
            "lists, dicts)",
        ) from exc


def decode_snapshot(
    run_id: str,
    head_json: str,
    batches: Sequence[bytes | str],
    *,
    backup: str,
    place: str | None = None,
) -> RunSnapshot:
    """A stored run from its head and its batches (JSON arrays, in order), or ``StoreError``.

    ``place`` (a file path) is named in the message when given.
    """
    try:
        head = RunHead.from_dict(json.loads(head_json))
        entries = _decode_batches(batches)
    except (ValueError, KeyError, TypeError, ValidationError) as exc:
        where = "" if place is None else f" in {place!r}"
        raise StoreError(
            f"the stored checkpoint of run {run_id!r}{where} cannot be read: {_first(exc)}",
            hint=_DAMAGED_RUN_HINT.format(backup=backup),
        ) from exc
    return RunSnapshot.of(run_id, entries, head)


_DAMAGED_RUN_HINT = (
    "delete the run (checkpointer.delete(run_id), or 'lovia runs delete RUN_ID') to start it "
    "again, or restore the {backup} from a backup"
)


def _first(exc: Exception) -> str:
    """What went wrong, in one line (pydantic's own message spans several)."""
    if isinstance(exc, ValidationError):
        return str(exc.errors()[0].get("msg", exc.title))
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def decode_batches(
    run_id: str, batches: Sequence[bytes | str], *, backup: str, place: str | None = None
) -> list[TranscriptEntry]:
    """A stored run's entries from some of its batches (in order), or ``StoreError``."""
    try:
        return _decode_batches(batches)
    except (ValueError, TypeError, ValidationError) as exc:
        where = "" if place is None else f" in {place!r}"
        raise StoreError(
            f"the stored checkpoint of run {run_id!r}{where} cannot be read: {_first(exc)}",
            hint=_DAMAGED_RUN_HINT.format(backup=backup),
        ) from exc


def _decode_batches(batches: Sequence[bytes | str]) -> list[TranscriptEntry]:
    """Decode every batch with one parse: the arrays are read as one array of arrays."""
    if not batches:
        return []
    if len(batches) == 1:
        return restore_raw(entries_from_json(batches[0]))
    # a batch written as TEXT by another tool still decodes
    parts = [b.encode() if isinstance(b, str) else b for b in batches]
    nested = _BATCHES.validate_json(b"[" + b",".join(parts) + b"]")
    return restore_raw([entry for batch in nested for entry in batch])


_BATCHES: TypeAdapter[list[list[TranscriptEntry]]] = TypeAdapter(list[list[TranscriptEntry]])
