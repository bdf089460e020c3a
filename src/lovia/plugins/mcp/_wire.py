"""Reading what an MCP server sends, one JSON-RPC message at a time, without trusting it.

A message that cannot be read becomes a ``BadMessage`` (with the request id it carried, when
one can be found) instead of being dropped, so the call waiting for it can fail at once. Text
that is not valid Unicode (bytes that are not UTF-8, lone surrogate escapes) is repaired with
U+FFFD. A message longer than the size cap is cut: its start is closed into valid JSON and
read, marked with ``CUT_KEY`` so the connection can tell the model what was left out.
"""

from __future__ import annotations

import codecs
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("lovia.mcp")

CUT_KEY = "lovia/cut"  # in a cut result's ``_meta``: {"read": bytes kept, "total": bytes sent}
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SCALAR = re.compile(r'[^\s"{}\[\]:,]+')
_SPACE = re.compile(r"\s*")
_PARTIAL_ESCAPE = re.compile(r"(\\+)(?:u[0-9a-fA-F]{0,3})?$")
_TAIL_ID = re.compile(
    r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$'
)
_ID_SCAN_CHARS = 65_536  # how far into a broken message its id is looked for


class BadMessage(Exception):
    """A message from the server that could not be read: ``reason`` says why, ``excerpt``
    shows how it began, ``request_id`` is the id it carried when one could be found."""

    def __init__(self, reason: str, excerpt: str, request_id: Any = None) -> None:
        super().__init__(f"{reason} (it began {excerpt})")
        self.reason = reason
        self.excerpt = excerpt
        self.request_id = request_id


@dataclass(frozen=True)
class Oversize:
    """A message longer than the cap: its first ``head`` bytes, its last ``tail`` bytes and
    its full length ``total`` (the middle was read and discarded)."""

    head: bytes
    tail: bytes
    total: int


def excerpt(text: str, limit: int = 100) -> str:
    """The start of ``text`` as a quoted, one-line excerpt."""
    shown = text[:limit]
    return repr(shown) + ("..." if len(text) > limit else "")


def decode(data: bytes, label: str) -> str:
    """UTF-8 text; bytes that are not UTF-8 become U+FFFD, and the log says so."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        log.warning(
            "mcp.bad_bytes: %s sent bytes that are not UTF-8 (first at byte %d of a message); "
            "they were replaced with U+FFFD",
            label,
            exc.start,
        )
        return data.decode("utf-8", "replace")


def parse(text: str, label: str) -> Any:
    """One JSON-RPC message (a ``SessionMessage``) or a ``BadMessage`` saying what was wrong."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValidationError as exc:
        errors = exc.errors()
        reason = str(errors[0]["msg"] if errors else exc).split(" [")[0]
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return BadMessage(_plain(reason), excerpt(text), find_id(text))
    repaired = _without_lone_surrogates(data)
    try:
        message = types.jsonrpc_message_adapter.validate_python(repaired, by_name=False)
    except (ValidationError, RecursionError):
        found = data.get("id") if isinstance(data, dict) else None
        return BadMessage("it is not a JSON-RPC message", excerpt(text), found)
    log.warning(
        "mcp.bad_text: %s sent text with broken characters (lone surrogate escapes); "
        "they were replaced with U+FFFD",
        label,
    )
    return SessionMessage(message)


def _plain(reason: str) -> str:
    text = reason.removeprefix("Invalid JSON: ")
    if "recursion limit" in text:
        return "its JSON is nested too deeply"
    if "EOF while parsing" in text:
        return "it ends in the middle (truncated)"
    return f"it is not valid JSON ({text})"


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _LONE_SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


def _tokens(text: str, end: int | None = None) -> Iterator[tuple[int, int, str, bool]]:
    """``(start, end, kind, whole)`` for each JSON token of ``text[:end]``: kind is one of
    ``{}[]:,``, ``"`` (a string; ``whole`` is False when the text ends inside it) or ``s`` (a
    number or literal). Strings are found with ``str.find``, so a long one costs little."""
    stop = len(text) if end is None else min(end, len(text))
    i = _SPACE.match(text, 0, stop).end()  # type: ignore[union-attr]
    while i < stop:
        c = text[i]
        if c == '"':
            j = i + 1
            while True:
                j = text.find('"', j, stop)
                if j < 0:
                    yield i, stop, '"', False
                    return
                k = j
                while text[k - 1] == "\\":
                    k -= 1
                if (j - k) % 2 == 0:  # not escaped
                    break
                j += 1
            yield i, j + 1, '"', True
            i = j + 1
        elif c in "{}[]:,":
            yield i, i + 1, c, True
            i += 1
        else:
            m = _SCALAR.match(text, i, stop)
            j = m.end() if m else i + 1
            yield i, j, "s", True
            i = j
        i = _SPACE.match(text, i, stop).end()  # type: ignore[union-attr]


def find_id(text: str) -> Any:
    """The top-level ``"id"`` of a JSON-RPC message that may be broken, or ``None``."""
    depth, key, after_colon = 0, "", False
    for start, end, kind, whole in _tokens(text, _ID_SCAN_CHARS):
        if kind in "{[":
            depth += 1
        elif kind in "}]":
            depth -= 1
        elif kind == ":":
            after_colon = True
            continue
        elif depth == 1 and after_colon and key == '"id"':
            return _scalar(text[start:end]) if whole else None
        elif depth == 1 and kind == '"' and whole:
            key = text[start:end]
        after_colon = False
    tail = _TAIL_ID.search(text[-1024:])
    return _scalar(tail.group(1)) if tail else None


def _scalar(tok: str) -> Any:
    try:
        value = json.loads(tok)
    except ValueError:
        return None
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def close_json(text: str) -> str | None:  # noqa: C901 - one token walk, its cases in order
    """The start of a JSON document made whole: cut back to where the last complete value
    ended (or inside the string being read), then every open object and array closed."""
    kinds: list[str] = []  # the open containers, "{" or "["
    wants_key: list[bool] = []  # per open container: the next string is an object key
    safe_at, safe_depth = -1, 0
    scalar_end = -1  # a number or literal is complete only when a token follows it
    for start, end, kind, whole in _tokens(text):
        if scalar_end >= 0:
            safe_at, safe_depth, scalar_end = scalar_end, len(kinds), -1
        if kind in "{[":
            kinds.append(kind)
            wants_key.append(kind == "{")
            safe_at, safe_depth = end, len(kinds)
        elif kind in "}]":
            if not kinds:
                return None
            kinds.pop()
            wants_key.pop()
            safe_at, safe_depth = end, len(kinds)
        elif kind == ",":
            if kinds and kinds[-1] == "{":
                wants_key[-1] = True
        elif kind == ":":
            if kinds:
                wants_key[-1] = False
        elif kind == '"':
            is_key = bool(kinds) and kinds[-1] == "{" and wants_key[-1]
            if not whole:  # the text ends inside this string
                if is_key:
                    break
                return text[:start] + _drop_partial_escape(text[start:end]) + '"' + _closers(kinds)
            if not is_key:
                safe_at, safe_depth = end, len(kinds)
        elif not (kinds and kinds[-1] == "{" and wants_key[-1]):
            scalar_end = end
    if safe_at < 0:
        return None
    return text[:safe_at] + _closers(kinds[:safe_depth])


def _closers(kinds: list[str]) -> str:
    return "".join("}" if k == "{" else "]" for k in reversed(kinds))


def _drop_partial_escape(body: str) -> str:
    end = body[-16:]  # an unfinished escape is short; searching only the end keeps it cheap
    m = _PARTIAL_ESCAPE.search(end)
    if m and len(m.group(1)) % 2 == 1:  # an escape begun and not finished
        return body[: len(body) - len(end) + m.start() + len(m.group(1)) - 1]
    return body


def salvage(cut: Oversize, label: str) -> Any:
    """An over-long answer read as far as the cap allowed: a ``SessionMessage`` whose result
    holds the blocks (the last one cut) that fit, marked with ``CUT_KEY``; or a
    ``BadMessage`` when not even that can be read."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    head = codecs.getincrementaldecoder("utf-8")("replace").decode(cut.head, final=False)
    tail = cut.tail.decode("utf-8", "replace")
    what = f"a message of {cut.total:,} bytes, over the size cap of {len(cut.head):,}"
    closed = close_json(head)
    try:
        data = json.loads(closed) if closed is not None else None
    except (ValueError, RecursionError):
        data = None
    found = find_id(head)
    if found is None:
        tail_id = _TAIL_ID.search(tail)
        found = _scalar(tail_id.group(1)) if tail_id else None
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(result, dict) or found is None:
        return BadMessage(what, excerpt(head), found)
    blocks = result.get("content")
    kept = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
    meta = {CUT_KEY: {"read": len(cut.head), "total": cut.total}}
    body = {"content": _without_lone_surrogates(kept), "_meta": meta}
    # built, not validated: the blocks are checked one by one when the result is read
    message = types.JSONRPCResponse.model_construct(jsonrpc="2.0", id=found, result=body)
    log.warning("mcp.cut: %s sent %s; only its start was read", label, what)
    return SessionMessage(message)
