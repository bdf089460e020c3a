"""A chat's stored entries as the API shows them: chat messages (``role``, ``content``,
``tool_calls``...), each user message with its ``ref``, and the exports (Markdown, JSON,
text, HTML).

A ``ref`` is ``"<run_id>:<n>"``: the ``n``-th user message (from 0) of that run. It names
one message for good: a rewind that cuts it removes the ref with it. Fields this server
adds ride along: ``index`` (the entry's place in the chat, what a rewind counts),
``run_id``, and on the messages of a run that was stopped or gave up, ``ended`` (with
``ended_error`` and ``ended_hint``).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..parts import ImagePart, part_to_dict
from ..session import NOTICE_META_KEY
from ..stores.session_protocol import Segment
from ..transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from .stamps import Group, run_timing, stamp

__all__ = ["export", "messages_of", "segment_messages", "user_refs"]


def _blank(role: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "role": role,
        "content": None,
        "ref": None,
        "reasoning": None,
        "tool_call_id": None,
        "name": None,
        "tool_calls": [],
        "timestamp": None,
        "duration": None,
        "is_error": False,
        "images": [],
        "compaction": None,
    }
    out.update(extra)
    return out


def _content(entry: InputEntry) -> Any:
    if isinstance(entry.content, str):
        return entry.content
    return [_part(p) for p in entry.content]


def _part(part: Any) -> Any:
    out = part_to_dict(part)
    if out.get("type") == "image" and out.get("data"):  # the bytes stay on the server
        out = {k: v for k, v in out.items() if k != "data"}
    return out


def _images(entry: ToolResultEntry) -> list[dict[str, Any]]:
    parts = [p for p in entry.parts or [] if isinstance(p, ImagePart)]
    return [{"index": n, "mime_type": p.mime_type} for n, p in enumerate(parts)]


def messages_of(
    entries: Sequence[TranscriptEntry],
    *,
    run_id: str | None = None,
    start: int = 0,
    names: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """``entries`` (one run's) as messages; ``start`` is the first entry's index in the chat,
    ``names`` the tool names of calls made in earlier runs (by call id)."""
    names = {} if names is None else names
    out: list[dict[str, Any]] = []
    turn: dict[str, Any] | None = None  # the assistant message being assembled
    users = 0
    for offset, entry in enumerate(entries):
        base = {"index": start + offset, "run_id": run_id, **(extra or {})}
        if isinstance(entry, (AssistantTextEntry, ReasoningEntry, ToolCallEntry)):
            if turn is None or (isinstance(entry, ReasoningEntry) and turn["content"]):
                turn = _blank("assistant", **base)
                out.append(turn)
            if isinstance(entry, AssistantTextEntry):
                turn["content"] = (turn["content"] or "") + entry.content
            elif isinstance(entry, ReasoningEntry):
                turn["reasoning"] = (turn["reasoning"] or "") + entry.content
            else:
                names[entry.call_id] = entry.name
                turn["tool_calls"].append(
                    {"id": entry.call_id, "name": entry.name, "arguments": entry.arguments}
                )
            continue
        turn = None
        if isinstance(entry, ToolResultEntry):
            out.append(
                _blank(
                    "tool",
                    content=entry.output,
                    tool_call_id=entry.call_id,
                    name=names.get(entry.call_id),
                    is_error=entry.is_error,
                    images=_images(entry),
                    **base,
                )
            )
        elif isinstance(entry, InputEntry):
            message = _blank(entry.role, content=_content(entry), **base)
            if entry.role == "user":
                message["ref"] = f"{run_id}:{users}" if run_id else None
                users += 1
            out.append(message)
    return out


def _ended(segment: Segment) -> dict[str, Any]:
    meta = segment.meta or {}
    ended, error = meta.get("ended"), meta.get("error")
    if not isinstance(ended, str):
        return {}
    out: dict[str, Any] = {"ended": ended}
    if isinstance(error, dict) and error.get("message"):
        out["ended_error"] = str(error["message"])
        if error.get("hint"):
            out["ended_hint"] = str(error["hint"])
    return out


def segment_messages(
    segments: Iterable[Segment],
    *,
    created_at: float | None = None,
    updated_at: float | None = None,
) -> list[dict[str, Any]]:
    """A chat's completed runs as messages, in order, each with its ``timestamp`` (and the
    answer that ended a run its ``duration``) as :mod:`.stamps` places them between the
    chat's ``created_at`` and ``updated_at``."""
    out: list[dict[str, Any]] = []
    groups: list[Group] = []
    notices: list[tuple[int, dict[str, Any]]] = []  # (place in out, the notice's message)
    names: dict[str, str] = {}
    start = 0
    for segment in segments:
        said = messages_of(
            segment.entries,
            run_id=segment.run_id,
            start=start,
            names=names,
            extra=_ended(segment),
        )
        groups.append((said, run_timing(segment)))
        out += said
        start += len(segment.entries)
        notice = (segment.meta or {}).get(NOTICE_META_KEY)
        if isinstance(notice, dict):  # the run compacted its context: said where it ended
            message = _blank(
                "context_compacted", compaction=notice, index=None, run_id=segment.run_id
            )
            notices.append((len(out), message))
            out.append(message)
    stamp(groups, created_at, updated_at)
    for place, message in notices:  # at the time of the message before it
        message["timestamp"] = out[place - 1]["timestamp"] if place else None
    return out


def user_refs(run_id: str, entries: Iterable[TranscriptEntry]) -> list[str]:
    """The refs of a run's user messages, in order."""
    count = sum(1 for e in entries if isinstance(e, InputEntry) and e.role == "user")
    return [f"{run_id}:{n}" for n in range(count)]


# -- exports ------------------------------------------------------------------------------------

EXPORT_TYPES = {
    "md": ("text/markdown; charset=utf-8", "md"),
    "txt": ("text/plain; charset=utf-8", "txt"),
    "json": ("application/json", "json"),
    "html": ("text/html; charset=utf-8", "html"),
}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text") or "") if isinstance(p, dict) else str(p) for p in content
        )
    return "" if content is None else str(content)


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("role", "content", "reasoning", "tool_calls", "tool_call_id", "name")
    out = []
    for m in messages:
        item = {k: m.get(k) for k in keys}
        if m.get("role") == "tool":  # a result says whether it failed, and its images' stubs
            item["is_error"] = bool(m.get("is_error"))
            item["images"] = list(m.get("images") or [])
        elif m.get("is_error"):
            item["is_error"] = True
        out.append(item)
    return out


def export(fmt: str, chat: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """The chat in ``fmt`` (``md``, ``txt``, ``json`` or ``html``)."""
    if fmt == "json":
        body = {
            "session_id": chat["id"],
            "title": chat.get("title"),
            "agent": chat.get("agent"),
            "messages": _plain(messages),
        }
        return json.dumps(body, ensure_ascii=False, indent=2)
    messages = [m for m in messages if m.get("role") != "context_compacted"]
    if fmt == "html":
        return _html(chat, messages)
    title = chat.get("title") or chat["id"]
    if fmt == "md":
        return _markdown(str(title), str(chat["id"]), messages)
    lines: list[str] = []
    for m in messages:
        lines += _section(m)
    return "\n".join(lines).rstrip() + "\n"


def _markdown(title: str, chat_id: str, messages: list[dict[str, Any]]) -> str:
    """Reasoning as a visible quote before the answer (it survives a PDF), a tool's result
    labelled with the tool its call named (0.9.119's layout)."""
    names = {
        str(c.get("id")): str(c.get("name"))
        for m in messages
        for c in m.get("tool_calls") or []
        if c.get("id")  # an empty id names nothing: it would mislabel other results
    }
    out = [f"# {title}", "", f"*Session: `{chat_id}`*", ""]
    for m in messages:
        role, text = str(m.get("role") or ""), _text(m.get("content"))
        if role == "tool":
            if not text.strip():
                continue
            call_id = m.get("tool_call_id")
            name = (names.get(str(call_id)) if call_id else None) or m.get("name")
            label = f"Tool result: `{name}`" if name else "Tool result"
            out += [f"**{label}**", "", "```", text, "```", ""]
            continue
        calls = m.get("tool_calls") or []
        if text or m.get("reasoning") or calls:
            out += [f"### {role.capitalize()}", ""]
        if m.get("reasoning"):
            thought = str(m["reasoning"]).splitlines() or [""]
            quoted = [f"> {ln}" if ln.strip() else ">" for ln in thought]
            out += ["> **💭 Thinking**", ">", *quoted, ""]
        if text:
            out += [text, ""]
        for call in calls:
            out += [
                f"**Tool: `{call.get('name')}`**",
                "",
                "```json",
                str(call.get("arguments")),
                "```",
                "",
            ]
    return "\n".join(out).rstrip() + "\n"


def _section(m: dict[str, Any]) -> list[str]:
    role = str(m.get("role") or "")
    out = [f"## {role.upper()}" + (f" ({m['name']})" if m.get("name") else ""), ""]
    if m.get("reasoning"):
        out += ["[thinking]", *(str(m["reasoning"]).splitlines() or [""]), ""]
    text = _text(m.get("content"))
    if text:
        out += [text, ""]
    for call in m.get("tool_calls") or []:
        out += [f"### Tool: {call.get('name')}", "```", str(call.get("arguments")), "```", ""]
    return out


def _html(chat: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    esc = html.escape
    title = esc(str(chat.get("title") or chat["id"]))
    parts = [
        "<!doctype html>",
        '<html><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">",
        f"<title>{title}</title>",
        "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;"
        "padding:0 1rem}section{margin:1rem 0}h2{font-size:.8rem;color:#666;"
        "text-transform:uppercase}pre{white-space:pre-wrap;background:#f4f4f4;padding:.5rem}"
        "</style></head><body>",
        f"<h1>{title}</h1>",
    ]
    for m in messages:
        role = esc(str(m.get("role") or ""))
        name = f" ({esc(str(m['name']))})" if m.get("name") else ""
        parts.append(f'<section class="{role}"><h2>{role}{name}</h2>')
        if m.get("reasoning"):
            parts.append(f"<blockquote>{esc(str(m['reasoning']))}</blockquote>")
        text = _text(m.get("content"))
        if text:
            parts.append(f"<pre>{esc(text)}</pre>")
        for call in m.get("tool_calls") or []:
            line = f"{call.get('name')}({call.get('arguments')})"
            parts.append(f"<pre>{esc(line)}</pre>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
