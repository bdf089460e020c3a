"""Chat ids in URLs: every session id the stores accept can be named in a path segment.

A chat id is any text the stores take as a ``session_id`` (a program may have used
``"alice@example.com"``, ``"team/alice"`` or ``"Zoë 1"``). In ``/api/chats/{chat_id}/...``
the segment is read two ways:

* ``~`` followed by the id's UTF-8 bytes in unpadded base64url (``~dGVhbS9hbGljZQ`` is
  ``team/alice``): this form carries any id, whatever proxies and HTTP clients do to paths;
* anything else is the id itself, percent-decoded (``alice%40example.com``). That cannot
  carry an id with a ``/`` (a ``%2F`` is decoded before routing, so it is refused), an id
  that starts with ``~``, nor ``.`` or ``..`` (clients drop such segments): use ``~`` then.

Ids made by ``POST /api/chats`` (hex) and every id of letters, digits and ``_.:-`` keep
their plain URLs; the page uses the ``~`` form for every other id. The web app refuses, with
422, an id longer than ``MAX_CHAT_ID_CHARS`` characters and one with a control character.
A tool call's id (``/approvals/{call_id}``: a provider or a model made it) travels the same
way.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import unicodedata
from typing import Any
from urllib.parse import unquote_to_bytes

__all__ = [
    "ENCODED_PREFIX",
    "ID_HINT",
    "MAX_CHAT_ID_CHARS",
    "PLAIN_CHAT_ID",
    "ApiPaths",
    "chat_id_problem",
    "chat_segment",
    "checked_chat_id",
    "read_chat_segment",
]

MAX_CHAT_ID_CHARS = 512
"""The longest chat id the web app serves (the stores' limit on a session id too)."""

ENCODED_PREFIX = "~"
PLAIN_CHAT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
"""Ids the page puts in a URL as they are (the ids of earlier versions: stable URLs)."""

_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")
ID_HINT = (
    "a chat id is 1 to 512 characters of text without control characters; in a URL, "
    "send it as '~' + its UTF-8 bytes in base64url without padding"
)


def chat_id_problem(chat_id: str, what: str = "chat id") -> str | None:
    """Why the web app cannot serve ``chat_id``, or ``None`` when it can (``what``: the
    kind of id, for the message; tool call ids follow the same rule)."""
    if not chat_id:
        return f"the {what} is empty"
    if len(chat_id) > MAX_CHAT_ID_CHARS:
        return f"the {what} is {len(chat_id)} characters long; the limit is {MAX_CHAT_ID_CHARS}"
    for position, char in enumerate(chat_id):
        if unicodedata.category(char) == "Cc":
            return (
                f"the {what} contains a control character (U+{ord(char):04X}) "
                f"at position {position}"
            )
        if "\ud800" <= char <= "\udfff":
            return f"the {what} contains a lone surrogate at position {position}: it is not text"
    return None


def checked_chat_id(chat_id: str, what: str = "chat id") -> str:
    """``chat_id`` if the web app can serve it; ``ValueError`` saying why not otherwise."""
    problem = chat_id_problem(chat_id, what)
    if problem is not None:
        raise ValueError(problem)
    return chat_id


def chat_segment(chat_id: str) -> str:
    """The path segment that names ``chat_id``: plain ids as they are, others ``~`` +
    base64url (what the page sends; the result needs no further percent-encoding)."""
    if PLAIN_CHAT_ID.fullmatch(chat_id):
        return chat_id
    encoded = base64.urlsafe_b64encode(chat_id.encode("utf-8")).rstrip(b"=")
    return ENCODED_PREFIX + encoded.decode("ascii")


def read_chat_segment(segment: str, what: str = "chat id") -> str:
    """The chat id (or other ``what``) a percent-decoded path segment names; ``ValueError``
    saying what is wrong when it names none the web app serves."""
    if not segment.startswith(ENCODED_PREFIX):
        return checked_chat_id(segment, what)
    encoded = segment[len(ENCODED_PREFIX) :]
    if not _BASE64URL.fullmatch(encoded) or len(encoded) % 4 == 1:
        raise ValueError(
            f"a {what} that starts with '~' in a URL is base64url ('A-Z a-z 0-9 - _', no "
            "padding), and this one is not"
        )
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except (binascii.Error, ValueError):  # pragma: no cover - the pattern above rules it out
        raise ValueError(f"the '~' form of the {what} is not base64url") from None
    if base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii") != encoded:
        # unused bits set: another spelling of the same bytes; one id, one spelling
        raise ValueError(f"the '~' form of the {what} is not in canonical base64url")
    try:
        value = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"the '~' form of the {what} does not decode to UTF-8 text") from None
    return checked_chat_id(value, what)


class ApiPaths:
    """ASGI middleware: 400 for an ``/api`` path that cannot name an id faithfully.

    * an encoded ``/`` (``%2F``): the server decodes the path before routing, so
      ``/api/chats/x%2Fevents`` would reach the route of chat ``x``'s events, and
      ``team%2Falice`` no route at all: the client meant an id with a ``/``;
    * percent-escapes that are not UTF-8 (``Zo%EB``, Latin-1): the server would read each
      such byte as U+FFFD, so ``Zo%EB`` and ``Zo%F6`` would both write to chat ``Zo\ufffd``.

    Either way the client is told to send the id's ``~`` form (or UTF-8 escapes).
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        path = raw.split(b"?", 1)[0] if isinstance(raw, bytes) else b""
        problem = None
        if path.startswith(b"/api/"):
            if b"%2f" in path.lower():
                problem = "an encoded '/' (%2F) in the path cannot be told from a real one"
            else:
                try:
                    unquote_to_bytes(path).decode("utf-8")
                except UnicodeDecodeError:
                    problem = "the path's percent-escapes are not UTF-8 (Latin-1?)"
        if problem is None:
            await self.app(scope, receive, send)
            return
        detail = {"code": "invalid_request", "message": problem, "hint": ID_HINT}
        body = json.dumps({"detail": detail}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
