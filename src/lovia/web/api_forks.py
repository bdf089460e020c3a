"""Forking over HTTP (issue 33): ``POST /api/runs/{run_id}/fork`` forks a stored run at a step
into a new chat, ready to resume there (``POST /api/chat/reconnect`` resumes it); the chat
fork (``POST /api/sessions/{id}/fork``) is in ``api_sessions``. Both are the stores' own
atomic forks: a fork into an id that is taken, or that another fork is writing, is ``409
fork_exists`` with nothing of it written.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Path

from ..errors import UserError
from ..stores.fork import ForkTargetTaken, fork_run_in_session
from .errors import WebError
from .schemas import RunForkRequest

if TYPE_CHECKING:
    from .deps import RouterDeps

__all__ = ["fork_routes", "fork_taken"]

RunIdPath = Annotated[str, Path(min_length=1, max_length=512)]


def fork_taken(exc: Exception) -> WebError:
    """The 409 for a fork whose new id is taken (or being written by another fork)."""
    return WebError(409, "fork_exists", str(exc), "fork into another id, or leave the id out")


def _bad_point(exc: UserError) -> WebError:
    return WebError(422, "invalid_fork_point", str(exc), exc.hint)


def fork_routes(deps: RouterDeps) -> APIRouter:
    router = APIRouter(tags=["runs"])
    store, sup = deps.store, deps.supervisor

    @router.post("/api/runs/{run_id}/fork", summary="Fork a run at a step into a new chat")
    async def fork_run(run_id: RunIdPath, body: RunForkRequest) -> dict[str, Any]:
        """The new chat holds the run's chat up to just before the run and the run up to
        the fork point, as an unfinished run: resuming it (``POST /api/chat/reconnect``)
        asks the model from turn ``at_turn + 1`` on and runs no tool before the fork
        point. The source run and its chat are untouched."""
        new_run_id = body.new_run_id or uuid.uuid4().hex
        chat_id = body.session_id or uuid.uuid4().hex
        if chat_id in sup.live or await store.get(chat_id) is not None:
            raise fork_taken(ValueError(f"chat {chat_id!r} exists already"))
        source = await store.checkpointer.load(run_id)
        if source is None:
            raise WebError(404, "run_not_found", f"no stored run {run_id!r} to fork")
        await store.adopt_sessions(every=0)  # the source chat's row, for the fork's origin
        options: dict[str, Any] = {
            "at_turn": body.at_turn,
            "before_call": body.before_call,
            "user_input": body.user_input,
            "tool_results": body.tool_results or {},
            "drop_calls": body.drop_calls or [],
        }
        try:
            forked, _ = await fork_run_in_session(
                store.session, store.checkpointer, run_id, new_run_id,
                new_session_id=chat_id, **options,
            )  # fmt: skip
        except ForkTargetTaken as exc:
            raise fork_taken(exc) from None
        except UserError as exc:
            raise _bad_point(exc) from None
        try:
            await _publish(deps, chat_id, source.session_id, forked.agent_name)
        except BaseException:
            await store.checkpointer.delete(new_run_id)  # the fork is this call's own
            await store.session.clear(chat_id)
            raise
        return {
            "run_id": new_run_id,
            "session_id": chat_id,
            "forked_from": {
                "run_id": run_id,
                "session_id": source.session_id,
                "at_turn": body.at_turn,
                "before_call": body.before_call,
            },
            "turns": forked.turns,
            "entries": len(forked.entries),
            "status": forked.status,
        }

    return router


async def _publish(deps: RouterDeps, chat_id: str, source: str | None, agent: str) -> None:
    """The fork's row in the chat list (linked to its source chat when it has one)."""
    store, now = deps.store, time.time()
    published = source is not None and await store.tables.insert_fork(chat_id, source, None, now)
    if not published:
        served = agent if agent in deps.agents else next(iter(deps.agents), None)
        await store.tables.upsert(
            chat_id, agent=served, title=None, parent_id=None, spawned_from=None, now=now
        )
    meta = await store.get(chat_id)
    deps.emit(
        "session_created",
        {
            "session_id": chat_id,
            "agent": meta.agent if meta else None,
            "title": meta.title if meta else None,
        },
    )
