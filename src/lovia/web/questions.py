"""``QuestionRegistry``: questions the agent asks a person (``ask_human``), answered from
the page (``POST /api/chat/answer``), one chat at a time.

Share one ``HumanChannel`` between the tool and the app
(``create_app(question_channel=channel, question_timeout=600)``). A question nobody answers
within ``timeout`` seconds is cancelled: the model gets a tool error and goes on, so a run
never waits for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

__all__ = ["QuestionRegistry"]


class QuestionRegistry:
    """The questions of ``channel``, by chat."""

    def __init__(self, channel: Any, *, timeout: float | None = None) -> None:
        self.channel = channel
        self.timeout = timeout
        self._asked: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    def pending(self, session_id: str) -> Any | None:
        """The chat's open question (the oldest, if several), or ``None`` when none is
        open, as 0.9.119's registry answers."""
        waiting = self._waiting(session_id)
        return waiting[0] if waiting else None

    def _waiting(self, session_id: str) -> list[Any]:
        return [q for q in self.channel.pending if q.session_id == session_id]

    def answer(self, session_id: str, text: str) -> bool:
        """Answer the chat's oldest open question; ``False`` when none is open."""
        question = self.pending(session_id)
        if question is None:
            return False
        self.channel.answer(question.id, text)
        return True

    resolve = answer  # 0.9.119's name

    def cancel_chat(self, session_id: str, reason: str = "the run was stopped") -> int:
        """Cancel every open question of the chat (its run is being stopped: the tool gets
        an error at once instead of waiting); how many there were."""
        waiting = self._waiting(session_id)
        for question in waiting:
            self.channel.cancel(question.id, reason)
        return len(waiting)

    def cancel_session(self, session_id: str, reason: str = "run cancelled") -> None:
        """``cancel_chat`` under 0.9.119's name (and its default reason)."""
        self.cancel_chat(session_id, reason)

    def start(self) -> None:
        """Watch for questions nobody answers in time (with a ``timeout``)."""
        if self.timeout is not None and self._task is None:
            self._task = asyncio.ensure_future(self._expire())

    async def _expire(self) -> None:
        assert self.timeout is not None
        while True:
            now = time.monotonic()
            for question in list(self.channel.pending):
                seen = self._asked.setdefault(question.id, now)
                if now - seen >= self.timeout:
                    self.channel.cancel(question.id, f"no answer within {self.timeout:g} s")
                    self._asked.pop(question.id, None)
            await asyncio.sleep(min(1.0, self.timeout / 4))

    async def aclose(self) -> None:
        """Stop watching, fail every open question (the server is shutting down: the tool
        gets an error instead of waiting) and close the channel to new ones, as 0.9.119
        did."""
        from ..tools.human import HumanChannel

        if isinstance(self.channel, HumanChannel):  # a channel of your own closes itself
            self.channel.close("the server is shutting down")
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
