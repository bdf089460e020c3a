"""Follow-up suggestions: questions the user might ask next, after an answer.

``create_app(followups=True)`` makes one small model call per request of
``POST /api/sessions/{id}/followups`` (on ``followup_model``, by default the chat's agent's
model); ``followups=fn`` puts your own suggester (``async fn(FollowupRequest) -> [str]``) in
its place. A suggester that fails, or finds nothing, gives ``[]``: the chips are never
load-bearing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..messages import Message

if TYPE_CHECKING:
    from .deps import RouterDeps

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
) -> list[str]:
    """The built-in suggester: one call to ``model`` (anything ``Agent`` takes)."""
    from ..agent import Agent
    from ..runner import Runner

    exchange = _exchange(request.messages)
    if not exchange:
        return []
    suggester = Agent(name="followups", model=model, instructions=instructions)
    result = await Runner.run(suggester, exchange, max_turns=1)
    return parse_followups(str(result.output or ""), limit=limit)


async def suggest(deps: RouterDeps, chat_id: str) -> list[str]:
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
        return [] if model is None else await generate_followups(request, model=model)
    except Exception as exc:  # no chips rather than an error
        log.info("follow-up suggestions for chat %s failed: %s", chat_id, exc)
        return []
