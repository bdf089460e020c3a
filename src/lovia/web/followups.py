"""Follow-up suggestions: questions the user might ask next, after an answer.

``create_app(followups=True)`` makes one small model call per request of
``POST /api/sessions/{id}/followups`` (on ``followup_model``, by default the chat's agent's
model); ``followups=fn`` puts your own suggester (``async fn(FollowupRequest) -> [str]``) in
its place. A suggester that fails, or finds nothing, gives ``[]``: the chips are never
load-bearing.

The built-in suggester's call is a checkpointed run in the chat store's checkpointer under
``followups:<chat id>:<id of the run they follow>`` (``web.side_runs``: a fixed-length one
for a long id): asked again for the same answer (a
reload, a second tab) it replays the suggestions without a model call, and a call a killed
server left is finished when a server starts again. A run of no chat: neither the chat list
nor the run history shows it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..messages import Message
from ..transcript import InputEntry

if TYPE_CHECKING:
    from .side_deps import SideDeps

from .side_runs import followups_run

__all__ = [
    "FOLLOWUP_INSTRUCTIONS",
    "FollowupFn",
    "FollowupRequest",
    "generate_followups",
    "parse_followups",
    "suggest",
]

log = logging.getLogger("lovia.web")

FOLLOWUP_INSTRUCTIONS = (
    "Suggest up to three short questions the user could ask next, in the user's own voice "
    "and language, each on its own line, each under twelve words, each about something the "
    "last answer did not already cover. Write NONE when the conversation is finished."
)
_LONGEST = 120
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d+[.):])\s*")


@dataclass
class FollowupRequest:
    """What a suggester gets: the chat, its agent's name and its messages, oldest first."""

    session_id: str
    agent: str
    messages: list[Message] = field(default_factory=list)


FollowupFn = Callable[[FollowupRequest], Awaitable[Sequence[str]]]
"""A suggester: the conversation in, questions out (possibly none)."""


def parse_followups(raw: str, *, limit: int = 3) -> list[str]:
    """A model's answer as questions: one per line, list marks and quotes removed, no
    duplicates, at most ``limit``."""
    if raw.strip().upper() == "NONE":
        return []
    out: list[str] = []
    for line in raw.splitlines():
        text = _LIST_MARK.sub("", line).strip().strip("\"'").strip()
        if text and len(text) <= _LONGEST and text.lower() not in {o.lower() for o in out}:
            out.append(text)
        if len(out) >= limit:
            break
    return out


def _exchange(messages: Sequence[Message]) -> str:
    lines = []
    for message in messages[-6:]:
        text = message.text if isinstance(getattr(message, "text", None), str) else ""
        if message.role in ("user", "assistant") and text:
            lines.append(f"{message.role.upper()}: {text[:1200]}")
    return "\n\n".join(lines)


async def generate_followups(
    request: FollowupRequest,
    *,
    model: Any,
    instructions: str = FOLLOWUP_INSTRUCTIONS,
    limit: int = 3,
    checkpointer: Any = None,
    run_id: str | None = None,
    lease_ttl: float = 30.0,
) -> list[str]:
    """The built-in suggester: one call to ``model`` (anything ``Agent`` takes); with a
    ``checkpointer``, a run stored under ``run_id`` that resumes (or replays) one of that id."""
    exchange = _exchange(request.messages)
    if not exchange:
        return []
    asked: list[InputEntry] = [InputEntry(role="user", content=exchange)]
    answer = await _ask(model, instructions, asked, checkpointer, run_id, lease_ttl)
    return parse_followups(answer, limit=limit)


async def _ask(
    model: Any,
    instructions: str,
    asked: list[InputEntry],
    checkpointer: Any,
    run_id: str | None,
    lease_ttl: float,
) -> str:
    from ..agent import Agent
    from ..runner import Runner

    suggester = Agent(name="followups", model=model, instructions=instructions)
    options: dict[str, Any] = {}
    if checkpointer is not None:
        from ..stores.run_options import CheckpointOptions

        options["checkpoint"] = CheckpointOptions(
            checkpointer, run_id, if_run_exists="resume", lease_ttl=lease_ttl
        )
    result = await Runner.run(suggester, asked, max_turns=1, **options)
    return str(result.output or "")


async def finish_followups(deps: SideDeps, chat_id: str, run: Any) -> None:
    """Finish ``chat_id``'s follow-up run (``run``: its ``RunSnapshot``) that a stopped
    server left, so the next ask for them replays its answer (resumed, it goes on from its
    stored input)."""
    if not deps.followups or callable(deps.followups):
        return
    meta = await deps.store.get(chat_id)
    agent = deps.agents.get(meta.agent or "") if meta else None
    model = deps.followup_model or (agent.model if agent else None)
    if model is None:
        return
    try:
        await _ask(
            model,
            FOLLOWUP_INSTRUCTIONS,
            [],
            deps.store.checkpointer,
            run.run_id,
            deps.lease_ttl,
        )
    except Exception as exc:  # asked again, they are made then
        log.info("could not finish the follow-ups of chat %s: %s", chat_id, exc)


async def suggest(deps: SideDeps, chat_id: str) -> list[str]:
    """The chat's suggestions under ``deps``' settings; ``[]`` when off or on failure."""
    if not deps.followups:
        return []
    from ..transcript import entries_to_messages

    meta = await deps.store.get(chat_id)
    name = meta.agent if meta and meta.agent in deps.agents else next(iter(deps.agents), "")
    request = FollowupRequest(
        chat_id, name, entries_to_messages(await deps.store.session.load(chat_id))
    )
    try:
        if callable(deps.followups):
            items = await deps.followups(request)
            return [str(i) for i in items or () if str(i).strip()]
        agent = deps.agents.get(name)
        model = deps.followup_model or (agent.model if agent else None)
        if model is None:
            return []
        runs = [s.run_id for s in await deps.store.session.segments(chat_id)]
        if not runs:
            return []
        found = await generate_followups(
            request,
            model=model,
            checkpointer=deps.store.checkpointer,
            run_id=followups_run(chat_id, runs[-1]),
            lease_ttl=deps.lease_ttl,
        )
        older = [r for r in runs if r != runs[-1]]
        if older:  # the chips of the answer before are not shown again: one run per chat
            await deps.store.checkpointer.delete(followups_run(chat_id, older[-1]))
        return found
    except Exception as exc:  # no chips rather than an error
        log.info("follow-up suggestions for chat %s failed: %s", chat_id, exc)
        return []
