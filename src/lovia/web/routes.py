"""The ``/api`` routes: JSON for chats and runs, SSE (``text/event-stream``) for answers.

Every route that starts a run (message, edit, regenerate, resume) answers with the run's
events as SSE; the run itself belongs to the server, so a dropped connection does not stop
it and ``GET /chats/{id}/events`` picks it up again.
"""

from __future__ import annotations

import re
import string
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request
from fastapi.responses import StreamingResponse

from .. import __version__
from ..chats.book import awaiting_approval
from ..chats.supervisor import NO_MODEL_HINT, LiveRun, RunSupervisor
from ..errors import UserError
from ..transcript import InputEntry, TranscriptEntry
from .ids import ID_HINT, read_chat_segment
from .models import (
    Decision,
    EditMessage,
    NewChat,
    Regenerate,
    SendMessage,
)
from .sse import encode_comment, encode_sse

__all__ = ["Refused", "router"]

router = APIRouter()


class Refused(HTTPException):
    """A refused request with the next thing to try: the body is ``{"detail", "hint"}``,
    like every other error of this API."""

    def __init__(self, status: int, detail: str, hint: str) -> None:
        super().__init__(status, detail=detail)
        self.hint = hint


def _chat_id(
    chat_id: Annotated[
        str,
        Path(
            description="the chat's session id: as it is (percent-encoded), or '~' and its "
            "UTF-8 bytes in unpadded base64url (needed for an id with '/', one starting "
            "with '~', and '.' or '..')",
        ),
    ],
) -> str:
    try:
        return read_chat_segment(chat_id)
    except ValueError as exc:
        raise Refused(422, str(exc), ID_HINT) from None


ChatId = Annotated[str, Depends(_chat_id)]


def _call_id(
    call_id: Annotated[
        str,
        Path(description="the tool call's id: as it is (percent-encoded), or its '~' form"),
    ],
) -> str:
    try:
        return read_chat_segment(call_id, "tool call id")
    except ValueError as exc:
        raise Refused(422, str(exc), ID_HINT.replace("a chat id", "an id")) from None


CallId = Annotated[str, Depends(_call_id)]


def _supervisor(request: Request) -> RunSupervisor:
    found: RunSupervisor = request.app.state.supervisor
    return found


Sup = Annotated[RunSupervisor, Depends(_supervisor)]


def _sse(run: LiveRun, after: int = 0) -> StreamingResponse:
    async def frames() -> AsyncIterator[bytes]:
        yield encode_comment(f"run {run.run_id}")
        async for seq, event in run.follow(after):
            yield encode_sse(seq, event)

    return StreamingResponse(
        frames(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Lovia-Run-Id": header_text(run.run_id)},
    )


_HEADER_SAFE = string.punctuation.replace("%", "")


def header_text(value: str) -> str:
    """``value`` as a header may carry it: printable ASCII as it is, anything else (a line
    break, non-ASCII: a run id a program chose may hold either) percent-encoded as UTF-8."""
    return quote(value, safe=_HEADER_SAFE)


def _is_user(entry: TranscriptEntry) -> bool:
    return isinstance(entry, InputEntry) and entry.role == "user"


def _is_demo(agent: Any) -> bool:
    from ..demo import DemoProvider

    return isinstance(agent.model, DemoProvider)


@router.get("/health", summary="Is the server up, and what does it serve?")
async def health(sup: Sup) -> dict[str, Any]:
    """``setup_problem`` says why the model cannot be used (no agent, no API key, an unknown
    provider, a base URL nothing listens on) and ``setup_hint`` what to do; ``blocking`` is
    true when every message would fail, so the page disables its input."""
    problems = await sup.setup.problems()
    blocked = {p.agent for p in problems if p.blocking}
    agents = [
        {"name": n, "demo": _is_demo(a), "usable": n not in blocked} for n, a in sup.agents.items()
    ]
    if not sup.agents:
        problem: dict[str, Any] | None = {
            "agent": None,
            "message": "no model is configured",
            "hint": NO_MODEL_HINT,
            "blocking": True,
        }
    else:
        problem = problems[0].to_dict() if problems else None
    return {
        "ok": True,
        "version": __version__,
        "agents": agents,
        "setup_problem": problem,
        "setup_hint": problem["hint"] if problem else None,
        "problems": [p.to_dict() for p in problems],
    }


@router.get("/chats", summary="List chats, most recently updated first")
async def list_chats(sup: Sup) -> list[dict[str, Any]]:
    out = await sup.chats.summaries()
    known = {c["id"] for c in out}
    for cid, run in sup.live.items():
        if cid not in known:
            out.insert(0, _fresh(cid, run))
    for chat in out:
        live = sup.live.get(chat["id"])
        chat["live"] = live.to_dict() if live else None
    return out


@router.post("/chats", status_code=201, summary="Create an empty chat (returns its id)")
async def new_chat(_: NewChat | None = None) -> dict[str, Any]:
    return {"id": uuid.uuid4().hex}


@router.get("/chats/{chat_id}", summary="A chat's entries, its live run and its unfinished run")
async def get_chat(chat_id: ChatId, sup: Sup) -> dict[str, Any]:
    detail = await sup.chats.detail(chat_id)
    live = sup.live.get(chat_id)
    detail["live"] = live.to_dict() if live else None
    # held, but not by a run of this server: another server is answering (or saving) it
    detail["busy_elsewhere"] = detail.pop("claimed") and not sup.busy_here(chat_id)
    unknown = not detail["entries"] and detail["pending"] is None and detail["created_at"] is None
    if unknown and live is None:
        raise Refused(404, f"no chat {chat_id!r}", "GET /api/chats lists the chats there are")
    if detail["title"] is None and live is not None:
        detail["title"] = live.input_text
    return detail


@router.delete("/chats/{chat_id}", summary="Delete a chat and the checkpoints of its runs")
async def delete_chat(chat_id: ChatId, sup: Sup) -> dict[str, Any]:
    run_ids = await sup.delete_chat(chat_id)
    return {"deleted": chat_id, "runs_deleted": run_ids}


@router.post(
    "/chats/{chat_id}/messages",
    summary="Send a message; the answer streams back as SSE of lovia events",
    response_class=StreamingResponse,
)
async def send(chat_id: ChatId, body: SendMessage, sup: Sup) -> StreamingResponse:
    """While a run of the chat is live on this server, the message joins it (the run reads
    it at its next step; event ``user_message_queued`` now, ``user_message_injected`` then)
    and the response follows that run from there on; a run live on another server: 409."""
    run, joined_at = await sup.send(chat_id, body.content, agent_name=body.agent)
    if joined_at is None:
        return _sse(run)
    response = _sse(run, joined_at - 1)
    response.headers["X-Lovia-Joined"] = "1"
    return response


@router.post("/chats/{chat_id}/stop", summary="Stop the live run and keep what it said")
async def stop(chat_id: ChatId, sup: Sup) -> dict[str, Any]:
    run = await sup.stop(chat_id)
    if run is not None:
        return {"stopped": run.run_id}
    async with sup.claimed(chat_id):  # a run live on another server: 409, nothing written
        settled = await sup.stop_parked(chat_id)
    if settled is None:
        raise Refused(
            409,
            f"chat {chat_id!r} has no live or unfinished run",
            "nothing to stop: GET /api/chats/{id} shows where the chat stands",
        )
    return {"stopped": settled}


@router.post(
    "/chats/{chat_id}/approvals/{call_id}",
    summary="Approve or reject a tool call the chat's run waits for, and resume the run (SSE)",
    response_class=StreamingResponse,
)
async def decide(chat_id: ChatId, call_id: CallId, body: Decision, sup: Sup) -> StreamingResponse:
    """409 when the call was decided otherwise, waits for nothing, or another server drives
    the chat; nothing is written then. Stop (``POST /chats/{id}/stop``) rejects every call
    still waiting, with the reason "stopped"."""
    return _sse(await sup.decide(chat_id, call_id, body.approve, body.reason))


@router.post(
    "/chats/{chat_id}/edit",
    summary="Replace an earlier user message and answer again (SSE)",
    response_class=StreamingResponse,
)
async def edit(chat_id: ChatId, body: EditMessage, sup: Sup) -> StreamingResponse:
    async def prepare() -> str:
        await sup.settle_pending(chat_id)
        entries = await sup.chats.session.load(chat_id)
        if body.index >= len(entries) or not _is_user(entries[body.index]):
            raise UserError(
                f"entry {body.index} of chat {chat_id!r} is not a user message",
                hint="pass the index of a user entry from GET /api/chats/{id}",
            )
        await sup.chats.rewind(chat_id, body.index)
        return body.content

    return _sse(await sup.begin(chat_id, prepare, agent_name=body.agent))


@router.post(
    "/chats/{chat_id}/regenerate",
    summary="Answer the last user message again (SSE)",
    response_class=StreamingResponse,
)
async def regenerate(
    chat_id: ChatId, sup: Sup, body: Regenerate | None = None
) -> StreamingResponse:
    async def prepare() -> str:
        await sup.settle_pending(chat_id)
        entries = await sup.chats.session.load(chat_id)
        last = max((i for i, e in enumerate(entries) if _is_user(e)), default=None)
        if last is None:
            raise UserError(
                f"chat {chat_id!r} has no user message to answer again",
                hint="send one first: POST /api/chats/{id}/messages",
            )
        question = entries[last]
        assert isinstance(question, InputEntry)
        await sup.chats.rewind(chat_id, last)
        return question.text

    return _sse(await sup.begin(chat_id, prepare, agent_name=body.agent if body else None))


@router.get(
    "/chats/{chat_id}/events",
    summary="Follow the live run: its events after ?after=N (or Last-Event-ID), then the rest",
    response_class=StreamingResponse,
)
async def follow(
    chat_id: ChatId,
    request: Request,
    sup: Sup,
    after: Annotated[int, Query(ge=0, le=10**18)] = 0,
) -> StreamingResponse:
    run = sup.live.get(chat_id)
    if run is None:
        raise Refused(
            404,
            f"chat {chat_id!r} has no live run",
            "nothing is live now: GET /api/chats/{id} has the chat's entries",
        )
    last_id = request.headers.get("last-event-id", "").strip()
    if re.fullmatch(r"[0-9]{1,18}", last_id):  # ASCII digits only; anything else is ignored
        after = max(after, int(last_id))
    return _sse(run, after)


@router.post(
    "/chats/{chat_id}/resume",
    summary="Resume the chat's run that a restart, crash or error left unfinished (SSE)",
    response_class=StreamingResponse,
)
async def resume(chat_id: ChatId, sup: Sup) -> StreamingResponse:
    pending = await sup.chats.pending_head(chat_id)
    if pending is None:
        raise Refused(
            404,
            f"chat {chat_id!r} has no unfinished run",
            "GET /api/runs/resumable lists the runs that can be resumed",
        )
    entry = sup.entry_agent_for(pending.agent_name)
    title = await sup.chats.run_title(pending)

    async def prepare() -> str | None:
        return title

    run = await sup.begin(chat_id, prepare, agent_name=entry.name, resume_run_id=pending.run_id)
    return _sse(run)


@router.get("/runs/resumable", summary="Runs that a restart, crash or error left unfinished")
async def resumable(sup: Sup) -> list[dict[str, Any]]:
    """Runs live on this server are left out; ``busy_elsewhere`` marks a run whose chat
    another server sharing the database is answering, or that a live worker drives (it is
    not unfinished, only elsewhere)."""
    out = []
    runs = [r for r in await sup.chats.pending_runs() if not sup.busy_here(r.session_id or "")]
    titles = await sup.chats.run_titles(runs)  # read together, each run's first entry only
    for run in runs:
        chat_id = run.session_id or ""
        out.append(
            {
                "run_id": run.run_id,
                "chat_id": chat_id,
                "status": run.status,
                "agent_name": run.agent_name,
                "updated_at": run.updated_at,
                "title": titles.get(run.run_id),
                "error": run.error,
                "awaiting_approval": awaiting_approval(run),
                "busy_elsewhere": await sup.chats.claim_holder(chat_id) is not None
                or await sup.chats.run_holder(run.run_id) is not None,
            }
        )
    return out


def _fresh(chat_id: str, run: LiveRun) -> dict[str, Any]:
    return {
        "id": chat_id,
        "title": run.input_text,
        "created_at": run.started_at,
        "updated_at": run.started_at,
        "pending": None,
    }
