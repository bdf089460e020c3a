"""The session routes: list and search chats, read one, rename or pin it, delete it (or all),
rewind it, fork it, export it, and what its runs left beside the messages (todos, UI data,
tool images, processes, follow-up suggestions).

A chat id in a path goes as it is (percent-encoded) or as ``~`` and its UTF-8 bytes in
base64url (``ids``): the ``~`` form carries any id, ``/`` included.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, cast

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import Response
from pydantic_core import to_json

from ..chats.supervisor import ChatBusy
from ..errors import UserError
from ..stores.capabilities import ListsSessions, has_capability
from ..stores.fork import ForkTargetTaken
from ..transcript import InputEntry, ToolCallEntry, ToolResultEntry
from ..workspace.errors import WorkspaceError
from .api_forks import fork_taken
from .errors import WebError
from .followups import suggest
from .ids import ID_HINT, read_chat_segment
from .messages import EXPORT_TYPES, export, segment_messages
from .schemas import ForkRequest, RewindRequest, SessionPatch
from .store import ref_offset
from .views import chat_info, detail
from .wire import TODO_TOOLS

if TYPE_CHECKING:
    from .deps import RouterDeps

__all__ = ["session_routes"]


def _chat_id(
    session_id: Annotated[str, Path(description="the chat id, or '~' + its base64url form")],
) -> str:
    try:
        return read_chat_segment(session_id, "session id")
    except ValueError as exc:
        raise WebError(422, "invalid_request", str(exc), ID_HINT) from None


ChatId = Annotated[str, Depends(_chat_id)]


async def _adopt_runs(deps: RouterDeps, runs: list[Any]) -> None:
    """A row for each chat known only from an unfinished run (its first message names it)."""
    known = await deps.store.tables.get_many([r.session_id for r in runs])
    missing = [r for r in runs if r.session_id not in known]
    if not missing:
        return
    titles = await deps.supervisor.chats.run_titles(missing)
    for run in missing:
        await deps.store.tables.upsert(
            run.session_id,
            agent=run.agent_name,
            title=titles.get(run.run_id),
            parent_id=None,
            spawned_from=None,
            now=run.updated_at,
        )


async def _listing(deps: RouterDeps, q: str, limit: int, offset: int) -> Sequence[dict[str, Any]]:
    store, sup = deps.store, deps.supervisor
    await store.adopt_sessions(every=0)  # chats other servers or programs wrote meanwhile
    runs = await sup.chats.pending_runs()
    await _adopt_runs(deps, runs)
    chats = await store.listing(q, limit=limit, offset=offset)
    pending = {r.session_id: r for r in runs}
    for chat in chats:
        live = sup.live.get(chat["id"])
        run = pending.get(chat["id"])
        chat["last_run_status"] = None
        chat["live"] = live.to_dict() if live else None
        chat["pending"] = (
            None
            if run is None
            else {
                "run_id": run.run_id,
                "status": run.status,
                "awaiting_approval": any(p.decision is None for p in run.pending_approvals),
            }
        )
    return chats


def _json(content: Any) -> Response:
    """``content`` as JSON, written by pydantic-core: a fifth of ``json.dumps``' time for a
    page of chats, the same values (a float as its shortest round-trip form)."""
    return Response(to_json(content, inf_nan_mode="null"), media_type="application/json")


def session_routes(deps: RouterDeps) -> APIRouter:  # noqa: C901 - one closure per route
    router = APIRouter(tags=["sessions"])
    store, sup = deps.store, deps.supervisor

    async def wound_down(chat_id: str) -> None:
        """An edit waits (bounded) for the chat's stopped runs to save what they said, as
        0.9.119 did: then its cut cannot be written over, and it counts what the page shows."""
        if not await sup.stopped_runs_done(chat_id):
            raise WebError(
                409,
                "run_stopping",
                "a stopped run of this chat is still saving what it said",
                "try again in a moment",
            )

    async def known(chat_id: str) -> None:
        """``404 session_not_found`` for a chat with no record here, a program's chat
        (adopted here) counting, as 0.9.119 answered."""
        if await store.get(chat_id) is None:
            await store.adopt_sessions(every=0)
        if await store.get(chat_id) is None:
            raise WebError(404, "session_not_found", "session not found")

    @router.get(
        "/api/sessions",
        summary="Chats, pinned first, then the most recent",
        response_model=list[dict[str, Any]],
    )
    async def list_sessions(
        q: Annotated[str, Query(max_length=200)] = "",
        limit: Annotated[int, Query(ge=1, le=1000)] = 200,
        offset: Annotated[int, Query(ge=0)] = 0,
        parent: Annotated[str | None, Query(max_length=512)] = None,
    ) -> Response:
        """``q`` searches titles and ids; ``parent`` lists the chats a chat owns (its
        background tasks) instead. Beside 0.9.119's fields: ``live`` and ``pending``."""
        # plain JSON already: a response of its own skips validating and re-encoding each
        # of the page's chats against the response model (issue 30's listing)
        if parent:
            metas = await store.list_children(parent)
            statuses = await store.latest_run_statuses([m.id for m in metas])
            return _json([{**m.to_dict(), "last_run_status": statuses.get(m.id)} for m in metas])
        return _json(await _listing(deps, q, limit, offset))

    @router.delete("/api/sessions", summary="Delete every chat")
    async def delete_all() -> dict[str, Any]:
        """Stops this server's live runs first; a chat another server is answering is
        left, and named in ``busy``."""
        for run in list(sup.live.values()):
            await sup.stop(run.chat_id)
        ids = set(await store.tables.all_ids())
        if has_capability(store.session, ListsSessions):
            ids.update(
                i.session_id for i in await cast("ListsSessions", store.session).list_sessions()
            )
        busy = []
        for chat_id in sorted(ids):
            try:
                await sup.delete_chat(chat_id)
            except ChatBusy:
                busy.append(chat_id)
                continue
            await deps.workspaces.close(chat_id)
        return {"ok": True, "busy": busy} if busy else {"ok": True}

    @router.get("/api/sessions/{session_id}", summary="A chat and its messages")
    async def get_session(chat_id: ChatId) -> dict[str, Any]:
        return await detail(deps, chat_id)

    @router.patch("/api/sessions/{session_id}", summary="Rename or pin a chat")
    async def patch(chat_id: ChatId, body: SessionPatch) -> dict[str, Any]:
        await known(chat_id)
        if body.title is not None:
            await store.set_title(chat_id, body.title)
            deps.emit("session_retitled", {"session_id": chat_id, "title": body.title.strip()})
        if body.pinned is not None:
            await store.set_pinned(chat_id, body.pinned)
        return await chat_info(deps, chat_id) or {}

    @router.delete("/api/sessions/{session_id}", summary="Delete a chat")
    async def delete(chat_id: ChatId) -> dict[str, Any]:
        """Stops its run here first; 409 while another server is answering it."""
        if chat_id in sup.live:
            await sup.stop(chat_id)
        tree = await store.tables.tree(chat_id)  # it and the task chats it owns go
        await sup.delete_chat(chat_id)
        for gone in dict.fromkeys((chat_id, *tree)):  # their background processes end too
            await deps.workspaces.close(gone)
        return {"ok": True}

    @router.post("/api/sessions/{session_id}/rewind", summary="Drop a user message and after")
    async def rewind(chat_id: ChatId, body: RewindRequest) -> dict[str, Any]:
        if not sup.chats.can_rewind:
            raise WebError(
                501,
                "feature_unavailable",
                "the chat store cannot rewind a chat",
                "serve a store whose session has rewind_runs or rewind (the built-in ones do)",
            )
        await wound_down(chat_id)
        if chat_id in sup.live:
            raise WebError(409, "run_active", "a run owns this chat", "stop it first")
        async with sup.claimed(chat_id):
            await sup.settle_pending(chat_id)
            segments = await store.session.segments(chat_id)
            keep = _offset(segments, body)
            rewound = await sup.chats.rewind(chat_id, keep)
            await store.clear_active_run_id(chat_id)
            messages = segment_messages(await store.session.segments(chat_id))
        return {
            "removed": rewound.removed,
            "entries": messages,
            "runs": list(rewound.affected_run_ids),
        }

    @router.post("/api/sessions/{session_id}/fork", summary="Copy a chat into a new one")
    async def fork(chat_id: ChatId, body: ForkRequest | None = None) -> dict[str, str]:
        ref = body.ref if body else None
        await known(chat_id)
        if ref is None:
            await wound_down(chat_id)
            if chat_id in sup.live or sup.busy_here(chat_id):
                raise WebError(409, "run_active", "a run owns this chat; fork a finished part")
            if await sup.chats.pending_head(chat_id) is not None:
                raise WebError(
                    409,
                    "run_unfinished",
                    "the chat's last run did not finish; resume it or stop it first",
                )
        new_id = body.new_id if body else None
        if new_id is not None and (new_id in sup.live or sup.busy_here(new_id)):
            raise fork_taken(ValueError(f"a run owns chat {new_id!r}"))
        try:
            new = await store.fork(chat_id, ref=ref, new_id=new_id)
        except ForkTargetTaken as exc:
            raise fork_taken(exc) from None
        except UserError as exc:
            raise WebError(422, "invalid_request", str(exc), exc.hint) from None
        except ValueError:
            raise WebError(404, "turn_not_found", f"message {ref!r} not found") from None
        except LookupError:
            raise WebError(404, "session_not_found", "session not found") from None
        if new is None:
            raise WebError(409, "nothing_to_fork", "nothing finished before that point to copy")
        meta = await store.get(new)
        deps.emit(
            "session_created",
            {
                "session_id": new,
                "agent": meta.agent if meta else None,
                "title": meta.title if meta else None,
            },
        )
        return {"session_id": new}

    @router.get("/api/sessions/{session_id}/todos", summary="The chat's latest todo list")
    async def todos(chat_id: ChatId) -> dict[str, Any]:
        return {"todos": _todos(await store.session.load(chat_id))}

    @router.post("/api/sessions/{session_id}/followups", summary="Questions to ask next")
    async def followups(chat_id: ChatId) -> dict[str, list[str]]:
        await known(chat_id)
        return {"followups": await suggest(deps, chat_id)}

    @router.get("/api/sessions/{session_id}/export", summary="The chat as a file")
    async def export_session(
        chat_id: ChatId,
        format: Annotated[str, Query(pattern="^(md|json|txt|html)$")] = "md",
    ) -> Response:
        info = await chat_info(deps, chat_id) or {"id": chat_id, "title": None, "agent": None}
        messages = segment_messages(await store.session.segments(chat_id))
        kind, ext = EXPORT_TYPES[format]
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in chat_id)[:80]
        headers = {"Content-Disposition": f'attachment; filename="lovia-{name}.{ext}"'}
        return Response(export(format, info, messages), media_type=kind, headers=headers)

    @router.get("/api/sessions/{session_id}/ui-data/{ref}", summary="A UI component's data")
    async def ui_data(chat_id: ChatId, ref: Annotated[str, Path(max_length=200)]) -> Response:
        payload = await store.get_ui_data(chat_id, ref)
        if payload is None:
            raise WebError(
                404,
                "ui_data_not_found",
                "no such component data in this chat",
                "the chat or its data was deleted; the page shows the preview",
            )
        # a ref names its data for good: the browser keeps it (private: it is the user's)
        return Response(
            payload,
            media_type="application/json",
            headers={"Cache-Control": "private, max-age=31536000, immutable"},
        )

    @router.get(
        "/api/sessions/{session_id}/tool-images/{call_id}/{index}",
        summary="An image a tool's result carried",
    )
    async def tool_image(
        chat_id: ChatId,
        call_id: Annotated[str, Path(max_length=512)],
        index: Annotated[int, Path(ge=0, le=1000)],
    ) -> Response:
        return _image(await store.session.load(chat_id), call_id, index)

    def _processes(chat_id: str) -> list[dict[str, Any]]:
        live = deps.workspaces.get(chat_id)
        if live is None:
            return []
        return [
            {
                "process_id": p.process_id,
                "command": p.command,
                "status": p.status,
                "exit_code": p.exit_code,
            }
            for p in live.background_processes()
        ]

    @router.get("/api/sessions/{session_id}/processes", summary="The chat's background processes")
    async def processes(chat_id: ChatId) -> list[dict[str, Any]]:
        """The background processes of the chat's workspace session on this server (``[]``
        before its first run here, after a restart, or with no shell). Listing takes none of
        their output: the model's reads are unaffected."""
        return _processes(chat_id)

    @router.post(
        "/api/sessions/{session_id}/processes/{process_id}/kill",
        summary="Stop one background process",
    )
    async def kill(chat_id: ChatId, process_id: Annotated[str, Path(max_length=256)]) -> Any:
        """Kill the process (its whole group); the list as it is then. The model's next
        reminder shows it killed."""
        live = deps.workspaces.get(chat_id)
        if live is None:
            raise WebError(404, "process_not_found", "no live workspace session for this chat")
        try:
            await live.kill_process(process_id)
        except WorkspaceError as exc:  # an unknown id, or a session that closed
            raise WebError(404, "process_not_found", str(exc)) from exc
        return _processes(chat_id)

    return router


def _offset(segments: Any, body: RewindRequest) -> int:
    if body.ref is not None:
        found = ref_offset(segments, body.ref)
        if found is None:
            raise WebError(
                404,
                "turn_not_found",
                f"message {body.ref!r} not found",
                "reload the chat: it changed since",
            )
        return found
    users = [
        i
        for i, e in enumerate(e for s in segments for e in s.entries)
        if isinstance(e, InputEntry) and e.role == "user"
    ]
    if body.user_turn is None or body.user_turn >= len(users):
        raise WebError(404, "turn_not_found", f"user turn {body.user_turn} not found")
    return users[body.user_turn]


def _todos(entries: list[Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    answered = {e.call_id for e in entries if isinstance(e, ToolResultEntry) and not e.is_error}
    for entry in entries:
        if isinstance(entry, ToolCallEntry) and entry.name in TODO_TOOLS:
            if entry.call_id not in answered:
                continue
            try:
                args = json.loads(entry.arguments or "{}")
            except ValueError:
                continue
            items = args.get("todos") if isinstance(args, dict) else None
            if isinstance(items, list):
                found = [
                    {
                        "content": str(t.get("content", "")),
                        "status": str(t.get("status", "")),
                        "active_form": t.get("active_form"),
                    }
                    for t in items
                    if isinstance(t, dict)
                ]
    return found


# What a tool image may be shown as on this origin: raster types, which run nothing.
# Any other type a tool (or an MCP server) declares, SVG in any spelling
# ("image/svg+xml; charset=utf-8", "IMAGE/SVG+XML") or HTML, is sent as a download that a
# browser opening it as a page would still run nothing of (a sandbox with no script).
RASTER_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp"}
)
IMAGE_POLICY = "default-src 'none'; img-src 'self' data:; sandbox"


def _image(entries: list[Any], call_id: str, index: int) -> Response:
    from ..parts import ImagePart

    for entry in entries:
        if isinstance(entry, ToolResultEntry) and entry.call_id == call_id:
            images = [p for p in entry.parts or [] if isinstance(p, ImagePart)]
            raw = images[index].data if index < len(images) else None
            if raw:
                try:
                    data = base64.b64decode(raw, validate=True)
                except (binascii.Error, ValueError):
                    raise WebError(404, "image_not_found", "the image is not base64") from None
                kind = images[index].mime_type or "application/octet-stream"
                if not kind.isascii() or not kind.isprintable():  # no header could carry it
                    kind = "application/octet-stream"
                headers = {
                    "Cache-Control": "private",
                    "Content-Security-Policy": IMAGE_POLICY,
                    "X-Content-Type-Options": "nosniff",
                }
                if kind.split(";")[0].strip().lower() not in RASTER_TYPES:
                    headers["Content-Disposition"] = "attachment"
                return Response(data, media_type=kind, headers=headers)
    raise WebError(404, "image_not_found", "no such tool image")
