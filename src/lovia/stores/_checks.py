"""The ids and arguments every store checks before any I/O: run and session ids, run
statuses, listing limits (the same refusal, with the same hint, from every backend).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import UserError

__all__ = [
    "MAX_ID_CHARS",
    "RUN_STATUSES",
    "check_limit",
    "check_run_ids",
    "check_statuses",
    "validate_id",
]

RUN_STATUSES: tuple[str, ...] = ("running", "interrupted", "completed", "failed")
"""Every ``RunStatus`` (``checkpoint.RunStatus``)."""
MAX_ID_CHARS = 512


def validate_id(value: Any, what: str) -> str:
    """Check a ``session_id`` / ``run_id``: a non-empty string of at most 512 characters.

    Ids are data, never SQL or paths (every store binds them as parameters), so any
    characters are allowed; the length cap keeps indexes and error messages sane.
    """
    if not isinstance(value, str):
        raise UserError(
            f"{what} must be a non-empty string, got {type(value).__name__}",
            hint=f"pass {what} as str (e.g. uuid4().hex)",
        )
    if not value:
        raise UserError(
            f"{what} must be a non-empty string, got ''", hint=f"pass a non-empty {what}"
        )
    if len(value) > MAX_ID_CHARS:
        raise UserError(
            f"{what} is {len(value)} characters long; the limit is {MAX_ID_CHARS}",
            hint=f"use a short generated id (uuid4().hex) as {what}",
        )
    if "\x00" in value:
        raise UserError(f"{what} contains a NUL character", hint=f"use a printable {what}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(
            f"{what} {value!r} is not valid Unicode text (it holds a lone surrogate, as a "
            "byte that is not UTF-8 gives)",
            hint=f"pass {what} as text, e.g. uuid4().hex",
        ) from None
    return value


def check_statuses(statuses: Sequence[str] | None) -> tuple[str, ...] | None:
    """Check ``list_runs(statuses=...)``: ``None`` for every run, else a tuple of known ones."""
    if statuses is None:
        return None
    if isinstance(statuses, str):
        raise UserError(
            "statuses must be a list of statuses, not one string",
            hint=f"pass statuses=[{statuses!r}]",
        )
    unknown = [s for s in statuses if s not in RUN_STATUSES]
    if unknown:
        raise UserError(
            f"unknown run status {unknown[0]!r}",
            hint=f"use any of {', '.join(RUN_STATUSES)}",
        )
    return tuple(statuses)


def check_limit(limit: int) -> int:
    """Check ``load_first_entries(limit=...)``: a whole number of entries, 1 or more."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UserError(
            f"limit must be a whole number of entries, 1 or more; got {limit!r}",
            hint="pass limit=1 for a run's first entry",
        )
    return limit


def check_run_ids(run_ids: Sequence[str]) -> tuple[str, ...]:
    """Check ``load_first_entries(run_ids)``: a list of run ids, each valid, in order once."""
    if isinstance(run_ids, str):
        raise UserError(
            "run_ids must be a list of run ids, not one string",
            hint=f"pass [{run_ids[:40]!r}]",
        )
    return tuple(dict.fromkeys(validate_id(r, "run_id") for r in run_ids))
