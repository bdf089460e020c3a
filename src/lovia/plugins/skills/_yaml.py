"""A small reader for the YAML a SKILL.md frontmatter holds, so skills need no YAML library.

It reads block mappings (nested by indentation), block and flow lists, flow mappings,
plain, single- and double-quoted scalars, literal (``|``) and folded (``>``) block scalars,
and comments. Anything else raises ``FrontmatterError``; the caller then treats the file as
having no metadata.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["FrontmatterError", "parse_mapping"]

_KEY = re.compile(r"^(?P<key>[^\s#'\"\[\]{}][^:#]*?|\"[^\"]*\"|'[^']*')\s*:(?:\s+(?P<rest>.*))?$")
_NUMBER_INT = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
_NUMBER_FLOAT = re.compile(r"^[-+]?(\d[\d_]*)?\.\d+([eE][-+]?\d+)?$")


class FrontmatterError(ValueError):
    """The frontmatter is not YAML this reader understands."""


class _Lines:
    def __init__(self, text: str) -> None:
        self.rows = [line.rstrip() for line in text.split("\n")]
        self.i = 0

    def skip_blank(self) -> None:
        while self.i < len(self.rows):
            stripped = self.rows[self.i].strip()
            if stripped and not stripped.startswith("#"):
                return
            self.i += 1

    def peek(self) -> tuple[int, str] | None:
        self.skip_blank()
        if self.i >= len(self.rows):
            return None
        row = self.rows[self.i]
        if "\t" in row[: len(row) - len(row.lstrip())]:
            raise FrontmatterError("tabs cannot indent YAML")
        return len(row) - len(row.lstrip(" ")), row.strip()


def parse_mapping(text: str) -> dict[str, Any]:
    """The top-level mapping of ``text`` (``{}`` for an empty document)."""
    lines = _Lines(text)
    first = lines.peek()
    if first is None:
        return {}
    value = _block(lines, first[0])
    if lines.peek() is not None:
        raise FrontmatterError(f"unexpected line: {lines.rows[lines.i].strip()!r}")
    if not isinstance(value, dict):
        raise FrontmatterError("the frontmatter is not a mapping")
    return value


def _block(lines: _Lines, indent: int) -> Any:
    head = lines.peek()
    assert head is not None
    if head[1] == "-" or head[1].startswith("- "):
        return _list(lines, indent)
    return _map(lines, indent)


def _map(lines: _Lines, indent: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while (head := lines.peek()) is not None and head[0] == indent:
        match = _KEY.match(head[1])
        if match is None or head[1].startswith("- "):
            raise FrontmatterError(f"expected 'key: value', got {head[1]!r}")
        key = _unquote_key(match.group("key").strip())
        lines.i += 1
        out[key] = _value_after(lines, indent, match.group("rest"))
    if head is not None and head[0] > indent:
        raise FrontmatterError(f"unexpected indentation at {head[1]!r}")
    return out


def _list(lines: _Lines, indent: int) -> list[Any]:
    out: list[Any] = []
    while (head := lines.peek()) is not None and head[0] == indent:
        if not (head[1] == "-" or head[1].startswith("- ")):
            break
        rest = head[1][1:].strip()
        if rest and _KEY.match(rest) and not rest.startswith(("'", '"', "[", "{")):
            # "- key: value": a mapping item; its keys line up two columns in
            lines.rows[lines.i] = " " * (indent + 2) + rest
            out.append(_map(lines, indent + 2))
            continue
        lines.i += 1
        out.append(_value_after(lines, indent, rest or None))
    return out


def _value_after(lines: _Lines, indent: int, rest: str | None) -> Any:
    if rest is None or rest.startswith("#"):
        head = lines.peek()
        if head is not None and head[0] > indent:
            return _block(lines, head[0])
        if head is not None and head[0] == indent and head[1].startswith("- "):
            return _list(lines, indent)  # a list may sit at its key's own indentation
        return None
    if rest[0] in "|>":
        return _block_scalar(lines, indent, rest)
    if rest[0] in "[{":
        return _flow_from(lines, rest)
    value = _scalar(rest)
    if isinstance(value, str) and rest[0] not in "'\"":
        more = []  # a plain scalar continued on more-indented lines
        while (head := lines.peek()) is not None and head[0] > indent:
            more.append(head[1])
            lines.i += 1
        if more:
            value = " ".join([value, *more])
    return value


def _block_scalar(lines: _Lines, indent: int, header: str) -> str:
    style, chomp = header[0], header[1:].split("#", 1)[0].strip()
    body: list[str] = []
    block_indent: int | None = None
    while lines.i < len(lines.rows):
        row = lines.rows[lines.i]
        if row.strip():
            width = len(row) - len(row.lstrip(" "))
            if width <= indent:
                break
            block_indent = width if block_indent is None else block_indent
            body.append(row[min(width, block_indent) :])
        else:
            body.append("")
        lines.i += 1
    while body and not body[-1]:
        body.pop()
    if style == "|":
        text = "\n".join(body)
    else:
        text = re.sub(r"(?<!\n)\n(?!\n)", " ", "\n".join(body)).replace("\n\n", "\n")
    if not text or chomp.startswith("-"):
        return text
    return text + "\n"


def _flow_from(lines: _Lines, rest: str) -> Any:
    text = rest
    while _depth(text) > 0 and lines.i < len(lines.rows):
        text += " " + lines.rows[lines.i].strip()
        lines.i += 1
    value, end = _flow(text, 0)
    tail = text[end:].strip()
    if tail and not tail.startswith("#"):
        raise FrontmatterError(f"unexpected text after a flow value: {tail!r}")
    return value


def _depth(text: str) -> int:
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
    return depth


def _flow(text: str, i: int) -> tuple[Any, int]:
    i = _spaces(text, i)
    if i >= len(text):
        raise FrontmatterError("a flow value is not closed")
    if text[i] in "[{":
        closing = "]" if text[i] == "[" else "}"
        items: list[Any] = []
        pairs: dict[str, Any] = {}
        i += 1
        while True:
            i = _spaces(text, i)
            if i >= len(text):
                raise FrontmatterError("a flow value is not closed")
            if text[i] == closing:
                return (items if closing == "]" else pairs), i + 1
            if closing == "}":
                key, i = _flow_scalar(text, i, ":")
                if i >= len(text) or text[i] != ":":
                    raise FrontmatterError("expected ':' in a flow mapping")
                pairs[str(key)], i = _flow(text, i + 1)
            else:
                item, i = _flow(text, i)
                items.append(item)
            i = _spaces(text, i)
            if i < len(text) and text[i] == ",":
                i += 1
    return _flow_scalar(text, i, "")


def _flow_scalar(text: str, i: int, stops: str) -> tuple[Any, int]:
    if text[i] in "'\"":
        end = _quote_end(text, i)
        return _scalar(text[i : end + 1]), end + 1
    j = i
    while j < len(text) and text[j] not in ",]}" + stops:
        j += 1
    return _scalar(text[i:j].strip()), j


def _spaces(text: str, i: int) -> int:
    while i < len(text) and text[i] == " ":
        i += 1
    return i


def _quote_end(text: str, start: int) -> int:
    quote, i = text[start], start + 1
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i
        i += 1
    raise FrontmatterError("a quoted string is not closed")


def _unquote_key(key: str) -> str:
    return str(_scalar(key)) if key[:1] in "'\"" else key


def _scalar(raw: str) -> Any:
    if raw[:1] in "'\"":
        end = _quote_end(raw, 0)
        tail = raw[end + 1 :].strip()
        if tail and not tail.startswith("#"):
            raise FrontmatterError(f"unexpected text after a quoted string: {tail!r}")
        inner = raw[1:end]
        if raw[0] == "'":
            return inner.replace("''", "'")
        try:
            return json.loads(f'"{inner}"')
        except ValueError as exc:
            raise FrontmatterError(f"bad escape in {raw!r}") from exc
    text = re.split(r"\s#", raw, maxsplit=1)[0].strip()
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if _NUMBER_INT.match(text):
        return int(text.replace("_", ""))
    if _NUMBER_FLOAT.match(text):
        return float(text.replace("_", ""))
    if text[0] in "[]{}&*!|>%@`":
        raise FrontmatterError(f"unsupported plain value {text!r}")
    return text
