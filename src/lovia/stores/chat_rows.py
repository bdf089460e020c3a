"""The rows of the web server's chat tables: a chat (``ChatMeta``), a run record (``RunRow``)
and a schedule (``ScheduleRow``), as ``lovia.web.ChatStore`` hands them out."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass
from typing import Any, cast

__all__ = [
    "CHAT_COLUMNS",
    "RUN_COLUMNS",
    "SCHEDULE_COLUMNS",
    "ChatMeta",
    "RunRow",
    "ScheduleRow",
    "chat_dict",
    "chat_page",
    "lenient",
]

CHAT_COLUMNS = (
    "id",
    "title",
    "agent",
    "created_at",
    "updated_at",
    "pinned",
    "parent_id",
    "origin_kind",
    "origin_session_id",
    "origin_ref",
)
RUN_COLUMNS = (
    "id",
    "session_id",
    "agent",
    "source",
    "status",
    "error",
    "started_at",
    "finished_at",
    "usage_json",
)
SCHEDULE_COLUMNS = (
    "id",
    "agent",
    "input",
    "session_id",
    "trigger_kind",
    "trigger_expr",
    "next_fire",
    "active",
    "last_session_id",
    "created_at",
    "updated_at",
    "until",
    "max_fires",
    "expires_at",
    "fire_count",
    "finished_reason",
    "context_json",
)


def _json(raw: Any) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:  # a damaged value reads as none rather than failing the list
        return None


def _dumps(value: Any) -> str | None:
    return json.dumps(value, ensure_ascii=False) if value else None


def _title(value: Any) -> Any:
    if isinstance(value, str):  # at most 120 characters, as lovia 0.9.119 kept them
        return value.replace("\0", "")[:120].strip() or None
    return value


def chat_dict(row: Any) -> dict[str, Any]:
    """``ChatMeta.from_row(row).to_dict()``, without making the ``ChatMeta``: the chat list
    makes one per row (a frozen dataclass sets each field through ``object.__setattr__``;
    a literal takes half of ``dict(zip(...))``' time)."""
    id_, title, agent, created, updated, pinned, parent, kind, source, ref = row
    return {
        "id": id_,
        "title": _title(title),
        "agent": agent,
        "created_at": created,
        "updated_at": updated,
        "pinned": bool(pinned),
        "parent_id": parent,
        "origin_kind": kind,
        "origin_session_id": source,
        "origin_ref": ref,
    }


def lenient(raw: bytes) -> str:
    """A text value, its bytes that are not UTF-8 read as U+FFFD (a damaged title costs
    only itself)."""
    return raw.decode("utf-8", "replace")


def chat_page(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[Any]:
    """The rows of a page of chats, read as UTF-8 by SQLite's module itself (a fifth of the
    read: a Python ``text_factory`` is called for each value), and again leniently when a
    value is not UTF-8."""
    if not isinstance(conn, sqlite3.Connection):  # PostgreSQL's
        return cast("list[Any]", conn.execute(sql, args).fetchall())
    conn.text_factory = str
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError as exc:
        if "decode" not in str(exc):
            raise
    finally:
        conn.text_factory = lenient
    return conn.execute(sql, args).fetchall()


@dataclass(frozen=True)
class ChatMeta:
    """One chat as the chat list knows it: its title, the agent it talks to, its times, its
    pin, the chat that owns it (a background task's ``parent_id``) and where it came from
    (``origin_kind``: ``"fork"`` or ``"spawn"``, with the source chat and the cut)."""

    id: str
    title: str | None
    agent: str | None
    created_at: float
    updated_at: float
    pinned: bool = False
    parent_id: str | None = None
    origin_kind: str | None = None
    origin_session_id: str | None = None
    origin_ref: str | None = None

    @classmethod
    def from_row(cls, row: Any) -> ChatMeta:
        values = list(row)
        values[5] = bool(values[5])
        values[1] = _title(values[1])
        return cls(*values)

    def to_dict(self) -> dict[str, Any]:
        # its fields by hand: ``asdict`` deep-copies each value, and the chat list makes
        # one of these per row (half of a search's time at 10,000 chats)
        return {
            "id": self.id,
            "title": self.title,
            "agent": self.agent,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "pinned": self.pinned,
            "parent_id": self.parent_id,
            "origin_kind": self.origin_kind,
            "origin_session_id": self.origin_session_id,
            "origin_ref": self.origin_ref,
        }


@dataclass(frozen=True)
class RunRow:
    """The record of one run the server drove: what started it (``source``: ``"user"``,
    ``"schedule:<id>"``...), how it ended (``status``: ``running``, ``completed``,
    ``failed``, ``cancelled``, ``interrupted``), its error and its token usage."""

    id: str
    session_id: str | None
    agent: str | None
    source: str
    status: str
    error: str | None
    started_at: float
    finished_at: float | None
    usage: dict[str, Any] | None

    @classmethod
    def from_row(cls, row: Any) -> RunRow:
        values = list(row)
        values[8] = _json(values[8])
        return cls(*values)

    def to_row(self) -> tuple[Any, ...]:
        values = list(asdict(self).values())
        values[8] = _dumps(values[8])
        return tuple(values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ScheduleRow:
    """A scheduled run: its ``input`` goes to ``agent`` in chat ``session_id`` (a new chat
    each time when ``None``) at each time ``trigger_kind`` (``cron``, ``every``, ``at``) and
    ``trigger_expr`` give, until a stop condition or a safety net ends it."""

    id: str
    agent: str | None
    input: str
    session_id: str | None
    trigger_kind: str
    trigger_expr: str
    next_fire: float
    active: bool
    last_session_id: str | None
    created_at: float
    updated_at: float
    until: str | None = None
    max_fires: int | None = None
    expires_at: float | None = None
    fire_count: int = 0
    finished_reason: str | None = None
    context: dict[str, Any] | None = None

    @classmethod
    def from_row(cls, row: Any) -> ScheduleRow:
        values = list(row)
        values[7] = bool(values[7])
        values[16] = _json(values[16])
        return cls(*values)

    def to_row(self) -> tuple[Any, ...]:
        values = list(asdict(self).values())
        values[7] = int(values[7])
        values[16] = _dumps(values[16])
        return tuple(values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
