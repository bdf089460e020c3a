"""UI components: a tool's result the page draws as a table, a chart, a page, or a kind of
your own, instead of text.

``ui_result(kind, props)`` wraps the data as the tool's output: one JSON object
``{"lovia_ui": {"kind", "props" | "from_args", "data"?}}`` (the model reads it too). Bulk data
stays out of the model's context with ``put_ui_data``: it is kept with the chat and the page
fetches it (``GET /api/sessions/{id}/ui-data/{ref}``); the envelope carries a preview.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from ..errors import ToolError, UserError

__all__ = [
    "ENVELOPE_KEY",
    "MAX_UI_DATA_BYTES",
    "UI_DATA_SINK",
    "check_json_size",
    "put_ui_data",
    "ui_result",
]

ENVELOPE_KEY = "lovia_ui"
MAX_UI_DATA_BYTES = 8 * 1024 * 1024
_KIND = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
_REF = re.compile(r"[A-Za-z0-9_-]{16,64}")
_UNSET: Any = object()

UI_DATA_SINK: ContextVar[Callable[[bytes], Awaitable[str | None]] | None] = ContextVar(
    "lovia_ui_data_sink", default=None
)
"""Where ``put_ui_data`` keeps data during a served run (set by the web server per run)."""


def check_json_size(value: Any, *, what: str, limit: int, hint: str) -> bytes:
    """``value`` as JSON bytes; a ``ToolError`` (the model can fix it) when it is not JSON,
    holds NaN or Infinity, or is over ``limit`` bytes."""
    try:
        encoded = json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    except ValueError as exc:
        raise ToolError(f"the {what} contains NaN or Infinity", hint="use null instead") from exc
    except TypeError as exc:
        raise ToolError(
            f"the {what} is not JSON: {exc}",
            hint="use strings, numbers, booleans and null: convert a Decimal with float(), "
            "a date or datetime with .isoformat(), bytes with .decode()",
        ) from exc
    if len(encoded) > limit:
        raise ToolError(
            f"the {what} is {len(encoded) // 1024} KiB; the limit is {limit // 1024} KiB",
            hint=hint,
        )
    return encoded


async def put_ui_data(value: Any) -> str | None:
    """Keep ``value`` (JSON data, at most 8 MiB) with the chat of the run calling it and
    return its ref for ``ui_result(..., data=ref)``; ``None`` outside a served run (a
    script, an eval) or when the chat is gone."""
    sink = UI_DATA_SINK.get()
    payload = check_json_size(
        value,
        what="UI data",
        limit=MAX_UI_DATA_BYTES,
        hint="keep fewer rows (narrow the query), or aggregate",
    )
    return None if sink is None else await sink(payload)


def ui_result(
    kind: str, props: Any = _UNSET, *, from_args: bool | str = False, data: str | None = None
) -> str:
    """A tool output the page draws as ``kind``: from ``props``, or from the call's own
    arguments (``from_args=True``, or one argument's name), and from the data stored under
    ``data`` (a ``put_ui_data`` ref; ``props`` is then the preview). Props reach the browser
    as untrusted data: a renderer writes them as text, never as HTML."""
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        raise UserError(
            f"invalid UI component kind: {kind!r}",
            hint="1 to 64 characters of a-z 0-9 _ . -, starting with a letter ('table')",
        )
    by_args = from_args is not False
    if (props is _UNSET) == (not by_args):
        raise UserError(
            "ui_result needs exactly one of `props` and `from_args`",
            hint="pass the data as props, or from_args=True (or an argument's name)",
        )
    if by_args and not (from_args is True or (isinstance(from_args, str) and from_args)):
        raise UserError(
            f"invalid from_args: {from_args!r}",
            hint="pass True (all the arguments) or the name of one argument",
        )
    if data is not None and (by_args or not isinstance(data, str) or not _REF.fullmatch(data)):
        raise UserError(
            f"invalid UI data ref: {data!r}" if not by_args else "`data` goes with `props`",
            hint="pass the ref put_ui_data returned, with the preview as props",
        )
    body: dict[str, Any] = {"kind": kind}
    if by_args:
        body["from_args"] = from_args
    else:
        body["props"] = props
    if data is not None:
        body["data"] = data
    try:
        return json.dumps({ENVELOPE_KEY: body}, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UserError(
            f"ui_result props are not JSON-serializable: {exc}",
            hint="use dicts, lists, strings, finite numbers, booleans and None",
        ) from exc
