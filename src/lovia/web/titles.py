"""Chat titles: the first message until a model names the chat (``create_app(titles=True)``).

The naming is one small model call per new chat, in the background, on ``title_model`` (by
default the chat's agent's own model); it never delays the answer, and a title a person
gave meanwhile is kept. A failed call leaves the first message as the title.

The call is a checkpointed run in the chat store's checkpointer under the run id
``title:<chat id>`` (``web.side_runs``: a fixed-length one for a long id): a server killed
during it finishes it when it starts again (``resume``, under the run's lease, so of two
servers on one database only one calls the model), and a finished one re-submitted replays
its answer instead of calling the model again. It is a run of no chat: neither the chat
list nor the run history shows it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..transcript import InputEntry

if TYPE_CHECKING:
    from .side_deps import SideDeps

from .side_runs import title_run

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


async def generate_title(
    model: Any,
    message: str,
    *,
    checkpointer: Any = None,
    run_id: str | None = None,
    lease_ttl: float = 30.0,
) -> str | None:
    """A title for a chat that starts with ``message``, from ``model``; with a
    ``checkpointer`` the call is a run stored under ``run_id`` that an existing run of that
    id resumes (or, finished, replays without a model call)."""
    from ..agent import Agent
    from ..runner import Runner

    namer = Agent(name="titles", model=model, instructions="You name conversations.")
    options: dict[str, Any] = {}
    if checkpointer is not None:
        from ..stores.run_options import CheckpointOptions

        options["checkpoint"] = CheckpointOptions(
            checkpointer, run_id, if_run_exists="resume", lease_ttl=lease_ttl
        )
    asked = InputEntry(role="user", content=_ASK + message[:2000])
    result = await Runner.run(namer, [asked], max_turns=1, **options)
    return clean_title(str(result.output or ""))


def asked_message(text: str) -> str | None:
    """The chat's first message in a title run's stored input (``None`` when not one)."""
    return text[len(_ASK) :] if text.startswith(_ASK) else None


class TitleMaker:
    """Names new chats in the background for the server (``deps``: its ``RouterDeps``)."""

    def __init__(self, deps: SideDeps) -> None:
        self.deps = deps

    def start(self, chat_id: str, first: str | None) -> None:
        if not self.deps.titles or not first:
            return
        self.deps.spawn(self._name(chat_id, first))

    def finish(self, chat_id: str, run: Any) -> None:
        """Finish ``chat_id``'s title run (``run``: its ``RunSnapshot``) that a stopped
        server left."""
        asked = (asked_message(e.text) for e in run.entries if isinstance(e, InputEntry))
        first = next((m for m in asked if m is not None), None)
        if first and self.deps.titles:
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
            title = await generate_title(
                model,
                first,
                checkpointer=deps.store.checkpointer,
                run_id=title_run(chat_id),
                lease_ttl=deps.lease_ttl,
            )
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
