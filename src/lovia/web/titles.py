"""Chat titles: the first message until a model names the chat (``create_app(titles=True)``).

The naming is one small model call per new chat, in the background, on ``title_model`` (by
default the chat's agent's own model); it never delays the answer, and a title a person
gave meanwhile is kept. A failed call leaves the first message as the title.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .deps import RouterDeps

__all__ = ["TitleMaker", "clean_title", "generate_title"]

log = logging.getLogger("lovia.web")

_ASK = (
    "Write a short title (at most six words) for a conversation that starts with the "
    "message below. Answer with the title only: no quotes, no final period.\n\nMessage:\n"
)


def clean_title(text: str) -> str | None:
    """A model's answer as a title: one line, no quotes or final period, at most 80
    characters; ``None`` when nothing is left."""
    line = next((ln for ln in text.strip().splitlines() if ln.strip()), "")
    line = line.strip().strip("\"'`*#").strip().rstrip(".").strip()
    if line.lower().startswith("title:"):
        line = line[6:].strip()
    return line[:80].strip() or None


async def generate_title(model: Any, message: str) -> str | None:
    """A title for a chat that starts with ``message``, from ``model``."""
    from ..agent import Agent
    from ..runner import Runner

    namer = Agent(name="titles", model=model, instructions="You name conversations.")
    result = await Runner.run(namer, _ASK + message[:2000], max_turns=1)
    return clean_title(str(result.output or ""))


class TitleMaker:
    """Names new chats in the background for a ``RouterDeps``."""

    def __init__(self, deps: RouterDeps) -> None:
        self.deps = deps

    def start(self, chat_id: str, first: str | None) -> None:
        if not self.deps.titles or not first:
            return
        self.deps.spawn(self._name(chat_id, first))

    async def _name(self, chat_id: str, first: str) -> None:
        deps = self.deps
        model = deps.title_model
        if model is None:
            meta = await deps.store.get(chat_id)
            agent = deps.agents.get(meta.agent or "") if meta else None
            agent = agent or next(iter(deps.agents.values()), None)
            model = agent.model if agent is not None else None
        if model is None:
            return
        try:
            title = await generate_title(model, first)
        except Exception as exc:  # the first message stays the title
            log.info("could not name chat %s: %s", chat_id, exc)
            return
        if not title:
            return
        from .store import title_text

        await deps.store.set_title_if_unchanged(chat_id, title, expected=title_text(first))
        meta = await deps.store.get(chat_id)
        if meta is not None and meta.title == title_text(title):
            deps.emit("session_retitled", {"session_id": chat_id, "title": meta.title})
