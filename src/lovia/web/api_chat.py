"""The chat routes: ``POST /api/chat`` (one blocking turn), ``/api/chat/stream`` (SSE),
``/reconnect``, ``/approve``, ``/answer``, ``/cancel``, ``/inject`` and ``/uninject``.

A run belongs to the server, not to the request that started it: a client that goes away
leaves it running into the chat, and ``reconnect`` picks it up again (on this server), or
resumes it from its checkpoint when no server drives it (a restart, a crash).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from ..chats.supervisor import LiveRun
from ..errors import UserError
from .attachments import user_input
from .errors import WebError
from .ids import MAX_CHAT_ID_CHARS, checked_chat_id
from .schemas import (
    AnswerRequest,
    ApprovalRequest,
    ChatRequest,
    InjectCancelRequest,
    InjectRequest,
)
from .streams import chat_stream, follow_chat
from .views import snapshot
from .wire import usage_dict

if TYPE_CHECKING:
    from .deps import RouterDeps

__all__ = ["chat_routes"]

SessionQuery = Annotated[str, Query(min_length=1, max_length=MAX_CHAT_ID_CHARS)]


def _sid(value: str) -> str:
    try:
        return checked_chat_id(value, "session id")
    except ValueError as exc:
        raise WebError(422, "invalid_request", str(exc)) from None


async def _agent_name(deps: RouterDeps, chat_id: str, wanted: str | None) -> str | None:
    """An existing chat keeps its agent (while it is served); a new one takes ``wanted``, which
    a server of several agents requires. An agent that is not served is refused either way
    (nothing is written)."""
    if wanted is not None and wanted not in deps.agents:
        raise WebError(
            404,
            "agent_not_found",
            f"unknown agent {wanted!r}",
            f"use one of: {', '.join(deps.agents)}",
        )
    meta = await deps.store.get(chat_id)
    if meta is not None and meta.agent in deps.agents:
        return meta.agent
    if wanted is None and len(deps.agents) > 1:
        raise WebError(
            400,
            "invalid_request",
            "this server serves several agents: say which one answers a new chat",
            f'add "agent": one of {", ".join(deps.agents)}',
        )
    return wanted


async def _send(
    deps: RouterDeps, body: ChatRequest, request: Request, *, park: bool
) -> tuple[str, LiveRun, int | None]:
    chat_id = body.session_id or uuid.uuid4().hex
    name = await _agent_name(deps, chat_id, body.agent)
    sup = deps.supervisor
    if chat_id not in sup.live and len(sup.live) >= deps.max_background_runs:
        raise WebError(
            429,
            "too_many_runs",
            f"{len(sup.live)} runs are live, the most this server runs at once",
            "wait for one to finish, then send again",
            headers={"Retry-After": "2"},
        )
    agent = sup.agent(name)

    async def start() -> Any:
        text = await user_input(body, agent)
        return await deps.run_start(
            chat_id, agent, request=request, context=body.context, park=park, input=text
        )

    run, joined_at = await sup.send(chat_id, body.message, agent_name=name, start=start)
    return chat_id, run, joined_at


def chat_routes(deps: RouterDeps) -> APIRouter:  # noqa: C901 - one closure per route
    router = APIRouter(tags=["chat"])

    @router.post("/api/chat", summary="Send a message and wait for the answer")
    async def blocking(body: ChatRequest, request: Request) -> JSONResponse:
        """One turn, answered when its run ends: ``{output, session_id, usage}``. Nobody sees
        its approval requests, so a call that needs approval is decided by the agent's
        ``approval_handler``, else refused. 409 ``run_active`` while the chat has a live run
        (a stream's message joins it instead)."""
        if body.session_id is not None and deps.supervisor.busy_here(_sid(body.session_id)):
            raise WebError(
                409,
                "run_active",
                "a run owns this chat",
                "wait for it to finish, or send with POST /api/chat/stream to join it",
                extra={"session_id": body.session_id},
            )
        chat_id, run, joined_at = await _send(deps, body, request, park=False)
        terminal: dict[str, Any] = {}
        async for _, event in run.follow(0 if joined_at is None else joined_at - 1):
            terminal = event
        while terminal.get("next_run_id") and run.next_run is not None:
            run = run.next_run
            async for _, event in run.follow(0):
                terminal = event
        if terminal.get("type") == "run_completed":
            result = terminal.get("result") or {}
            out = {
                "output": result.get("output"),
                "session_id": chat_id,
                "usage": usage_dict(result.get("usage")),
            }
            return JSONResponse(out)
        error = terminal.get("error") or {}
        if terminal.get("stopped") or error.get("type") == "RunCancelled":
            raise WebError(
                409,
                "run_cancelled",
                "the run was stopped before it answered",
                extra={"session_id": chat_id},
            )
        if error.get("type") == "ApprovalPending":
            raise WebError(
                409,
                "approval_pending",
                str(error.get("message") or ""),
                "decide it with POST /api/chat/approve",
                extra={"session_id": chat_id},
            )
        raise WebError(
            500,
            "run_failed",
            str(error.get("message") or "the run failed"),
            error.get("hint"),
            extra={"session_id": chat_id},
        )

    @router.post(
        "/api/chat/stream",
        response_class=StreamingResponse,
        summary="Send a message; the answer streams back (SSE)",
    )
    async def stream(body: ChatRequest, request: Request) -> StreamingResponse:
        """Starts a run, or joins the chat's live run (the message is read at its next
        step; the stream then starts with ``snapshot`` and replays the run)."""
        chat_id, run, joined_at = await _send(deps, body, request, park=True)
        head: list[tuple[str, Any]] = [_session(chat_id)]
        if joined_at is not None:
            head.append(("snapshot", await snapshot(deps, chat_id, "running")))
        return chat_stream(deps.supervisor, chat_id, run, head=head, joined=joined_at is not None)

    @router.post(
        "/api/chat/reconnect",
        response_class=StreamingResponse,
        summary="Follow the chat's live run again, or resume its unfinished run (SSE)",
    )
    async def reconnect(
        request: Request,
        session_id: SessionQuery,
        after: Annotated[int, Query(ge=0, le=10**9)] = 0,
    ) -> StreamingResponse:
        """``snapshot`` then the live run's events (from its ``after + 1``-th: what a client
        that saw ``after`` events missed). A chat whose run waits for an approval gets its
        ``approval_required`` events, and the stream goes on once it is decided. A run no
        server drives (a restart, a crash) is resumed from its checkpoint."""
        chat_id = _sid(session_id)
        sup = deps.supervisor
        live = sup.live.get(chat_id)
        if live is not None:
            head = [_session(chat_id), ("snapshot", await snapshot(deps, chat_id, "running"))]
            return chat_stream(sup, chat_id, live, head=head, after=after)
        pending = await sup.chats.pending_head(chat_id)
        if pending is None:
            raise WebError(
                404,
                "run_not_found",
                "no live or unfinished run in this chat",
                "GET /api/sessions/{id} has the chat as it is",
            )
        if any(p.decision is None for p in pending.pending_approvals):
            return _parked_stream(deps, chat_id, pending)
        if pending.agent_name not in _reachable(deps):
            raise WebError(
                409,
                "agent_unregistered",
                f"the run's agent {pending.agent_name!r} is not served here",
            )
        entry = sup.entry_agent_for(pending.agent_name)
        title = await sup.chats.run_title(pending)
        context = await deps.store.get_active_context(chat_id)
        how = await deps.run_start(chat_id, entry, request=request, context=context, resumed=True)

        async def prepare() -> str | None:
            return title

        run = await sup.begin(
            chat_id,
            prepare,
            agent_name=sup.served_name(entry),
            resume_run_id=pending.run_id,
            start=how,
        )
        head = [_session(chat_id), ("snapshot", await snapshot(deps, chat_id, "running"))]
        return chat_stream(sup, chat_id, run, head=head)

    @router.post("/api/chat/approve", summary="Approve or deny a call the chat's run waits for")
    async def approve(body: ApprovalRequest, request: Request) -> dict[str, Any]:
        """The decision resumes the run (an approved call runs once; a denied one gets its
        refusal, with ``reason``, as its result); a stream that showed the request goes on
        with it. ``run_id`` and ``digest`` bind the decision to what was shown: 409
        ``approval_stale`` when that run no longer waits or the call changed, with nothing
        run. Without them (0.9.119's clients) the call id alone must name exactly one
        waiting call of the chat's latest run (409 ``approval_ambiguous`` otherwise). 404
        when no call of that id waits; 409 when it was decided otherwise, or another server
        is answering the chat."""
        sup = deps.supervisor
        live = sup.live.get(body.session_id)
        if live is not None:  # the request was just shown: the run is parking
            with _suppress_timeout():
                await asyncio.wait_for(live.finished.wait(), timeout=10)
        head = await sup.chats.pending_head(body.session_id)
        waiting = (
            [] if head is None else [p for p in head.pending_approvals if p.call_id == body.call_id]
        )
        moved_on = body.run_id is not None and (head is None or head.run_id != body.run_id)
        if not moved_on and (head is None or not waiting):
            raise WebError(
                404,
                "approval_not_found",
                "no pending approval matches",
                "GET /api/sessions/{id} lists the calls waiting (pending.approvals)",
            )
        run = await sup.decide(
            body.session_id,
            body.call_id,
            body.decision == "approve",
            body.reason,
            run_id=body.run_id,
            digest=body.digest,
            request=request,  # run_deps sees who decided, as a message's run sees its sender
        )
        return {"ok": True, "run_id": run.run_id}

    @router.post("/api/chat/answer", summary="Answer the question the chat's run asked")
    async def answer(body: AnswerRequest) -> dict[str, Any]:
        questions = deps.questions
        if questions is None:
            raise WebError(
                404,
                "feature_unavailable",
                "no question channel",
                "create_app(question_channel=...) with the one ask_human uses",
            )
        if not questions.answer(body.session_id, body.answer):
            raise WebError(404, "question_not_found", "no question waits in this chat")
        return {"ok": True}

    @router.post("/api/chat/cancel", summary="Stop the chat's run; what it said is kept")
    async def cancel(session_id: SessionQuery) -> dict[str, Any]:
        chat_id = _sid(session_id)
        sup = deps.supervisor
        stopping = asyncio.ensure_future(sup.stop(chat_id))
        while deps.questions is not None and not stopping.done():
            # a tool waiting for a person's answer (now, or asked before the run sees the
            # stop) gets an error instead, so the run can end
            deps.questions.cancel_chat(chat_id)
            await asyncio.wait({stopping}, timeout=0.05)
        run = await stopping
        if run is not None:
            return {"ok": True, "stopped": run.run_id}
        stopped = None
        if await sup.chats.pending_head(chat_id) is not None:
            async with sup.claimed(chat_id):  # another server's run: 409, nothing written
                stopped = await sup.stop_parked(chat_id)
        return {"ok": True, "stopped": stopped}

    @router.post("/api/chat/inject", summary="A message for the chat's live run")
    async def inject(body: InjectRequest) -> dict[str, Any]:
        """``{accepted: true, id}`` when the run will read it at its next step;
        ``{accepted: false}`` when no run of the chat is live here."""
        live = deps.supervisor.live.get(body.session_id)
        if live is None or not live.accepts_messages():
            return {"accepted": False}
        if len(live.mailbox) >= deps.supervisor.mailbox_limit:
            raise WebError(
                429,
                "mailbox_full",
                f"{len(live.mailbox)} messages wait for the run already",
                "wait until the run reads them, then send again",
                headers={"Retry-After": "1"},
            )
        token = await live.mailbox.put(body.message)  # in the run's checkpoint before 200
        await live.publish({"type": "user_message_queued", "content": body.message, "token": token})
        return {"accepted": True, "id": token}

    @router.post("/api/chat/uninject", summary="Take back a message the run has not read")
    async def uninject(body: InjectCancelRequest) -> dict[str, bool]:
        live = deps.supervisor.live.get(body.session_id)
        return {"removed": bool(live is not None and live.mailbox.remove(body.id))}

    return router


def _reachable(deps: RouterDeps) -> set[str]:
    from .._run.resume import reachable_agents

    names: set[str] = set()
    for agent in deps.agents.values():
        names.update(reachable_agents(agent))
    return names


def _parked_stream(deps: RouterDeps, chat_id: str, pending: Any) -> StreamingResponse:
    """A chat whose run waits for decisions: ``snapshot``, its ``approval_required`` events,
    then the run the decisions resume."""
    from .streams import KEEPALIVE, header_text
    from .wire import encode

    sup = deps.supervisor
    started = deps.next_run(chat_id)

    async def body() -> Any:
        try:
            async for frame in frames():
                yield frame
        finally:
            started.cancel()

    async def frames() -> Any:
        yield encode(*_session(chat_id))
        yield encode("snapshot", await snapshot(deps, chat_id, "awaiting_approval"))
        for p in pending.pending_approvals:
            if p.decision is None:
                yield encode(
                    "approval_required",
                    {
                        "id": p.call_id,
                        "name": p.tool_name,
                        "arguments": p.arguments,
                        "run_id": pending.run_id,
                        "digest": p.digest,
                    },
                )
        while True:
            live = started.result() if started.done() else sup.live.get(chat_id)
            if live is not None:
                async for frame in follow_chat(sup, chat_id, live):
                    yield frame
                return
            head = await sup.chats.pending_head(chat_id)
            if head is None or head.run_id != pending.run_id or sup.closing:
                return
            # the run a decision here resumes, even one over before this wakes; a decision
            # on another server shows in the store read above
            await asyncio.wait({started}, timeout=KEEPALIVE)
            if not started.done():
                yield b": waiting for a decision\n\n"

    headers = {"Cache-Control": "no-store", "X-Lovia-Run-Id": header_text(pending.run_id)}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


class _suppress_timeout:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, *_: Any) -> bool:
        return kind is not None and issubclass(kind, (asyncio.TimeoutError, UserError))


def _session(chat_id: str) -> tuple[str, Any]:
    """The ``session`` frame every chat stream opens with, a reconnect's too (as 0.9.119)."""
    return ("session", {"session_id": chat_id})
