"""Asking a person: the ``ask_human`` tool and the ``HumanChannel`` an operator answers on.

It is the inverse of an approval. With an approval the runner asks a person "may this call
run?" (``lovia.approvals``); with ``ask_human`` the model asks a person for something only
they know, and gets their free text back as the tool's result.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field

from ..errors import ToolError
from ..run_context import RunContext
from .base import Tool, tool

__all__ = ["HumanChannel", "HumanQuestion", "QuestionOption", "ask_human"]


class QuestionOption(BaseModel):
    """One suggested answer to a question: a short single-line ``label`` (picking the option
    answers with exactly this text) and an optional one-line ``description``."""

    label: Annotated[
        str,
        Field(
            min_length=1,
            pattern=r"^[^\r\n]+$",
            description="A few words on one line; choosing it answers with this text.",
        ),
    ]
    description: Annotated[
        str,
        Field(pattern=r"^[^\r\n]*$", description="One line on what the choice means, or empty."),
    ] = ""


@dataclass
class HumanQuestion:
    """A question waiting for a person: answer it with ``HumanChannel.answer(q.id, text)``.
    ``session_id`` / ``run_id`` name the asking run (when it has them), for routing."""

    id: str
    question: str
    options: list[QuestionOption] = field(default_factory=list)
    multi_select: bool = False
    session_id: str | None = None
    run_id: str | None = None


class HumanChannel:
    """Where ``ask_human`` questions wait for an operator. Use it from the event loop's
    thread (from another thread, hop first: ``loop.call_soon_threadsafe(channel.answer, ...)``).

    One consumer iterates ``questions()``; ``pending`` is a snapshot for polling.
    ``answer`` resolves a question (the tool returns the text); ``cancel`` and ``close``
    fail it with a ``ToolError`` the model sees, and ``close`` also ends the iteration and
    refuses later questions.
    """

    def __init__(self) -> None:
        self._futures: dict[str, asyncio.Future[str]] = {}
        self._asked: dict[str, HumanQuestion] = {}
        self._feed: asyncio.Queue[HumanQuestion | None] = asyncio.Queue()
        self._closed = False

    @property
    def pending(self) -> list[HumanQuestion]:
        """The questions not yet answered or cancelled, oldest first."""
        return [q for qid, q in self._asked.items() if not self._futures[qid].done()]

    async def questions(self) -> AsyncIterator[HumanQuestion]:
        """Each question as it is asked (those asked earlier first); ends on ``close()``.
        A question resolved before it is reached is skipped."""
        while not (self._closed and self._feed.empty()):
            item = await self._feed.get()
            if item is None:
                return
            future = self._futures.get(item.id)
            if future is not None and not future.done():
                yield item

    def answer(self, question_id: str, answer: str) -> bool:
        """Answer a pending question; ``False`` when it is unknown or already resolved."""
        future = self._futures.get(question_id)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    def cancel(self, question_id: str, reason: str = "cancelled") -> bool:
        """Fail a pending question: the model sees ``reason`` as the tool's error."""
        future = self._futures.get(question_id)
        if future is None or future.done():
            return False
        future.set_exception(ToolError(reason))
        return True

    def close(self, reason: str = "channel closed") -> None:
        """Cancel every pending question with ``reason``, end ``questions()``, and refuse
        new questions."""
        if self._closed:
            return
        self._closed = True
        for qid in list(self._futures):
            self.cancel(qid, reason)
        self._feed.put_nowait(None)

    def _new_question(
        self,
        question: str,
        *,
        options: Sequence[QuestionOption] = (),
        multi_select: bool = False,
        session_id: str | None = None,
        run_id: str | None = None,
    ) -> tuple[HumanQuestion, asyncio.Future[str]]:
        if self._closed:
            raise ToolError(
                "human channel is closed", hint="no operator is listening; go on without it"
            )
        options = list(options)
        asked = HumanQuestion(
            id=uuid.uuid4().hex,
            question=question,
            options=options,
            multi_select=bool(multi_select and options),  # pick-many needs something to pick
            session_id=session_id,
            run_id=run_id,
        )
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._futures[asked.id] = future
        self._asked[asked.id] = asked
        future.add_done_callback(lambda _: self._discard(asked.id))
        self._feed.put_nowait(asked)
        return asked, future

    def _discard(self, question_id: str) -> None:
        future = self._futures.pop(question_id, None)
        self._asked.pop(question_id, None)
        if future is not None and not future.done():
            future.cancel()


def _distinct_labels(options: list[QuestionOption]) -> list[QuestionOption]:
    labels = [o.label for o in options]
    if len(set(labels)) != len(labels):
        raise ValueError("option labels must be distinct")
    return options


Options = Annotated[
    list[QuestionOption], Field(min_length=2, max_length=4), AfterValidator(_distinct_labels)
]


def ask_human(channel: HumanChannel, *, name: str = "ask_human") -> Tool:
    """A tool the model calls to ask a person through ``channel`` and wait for the reply.

    It runs alone (``parallel=False``): a run has at most one open question, since the answer
    often decides what comes next. Give it a ``timeout`` (``Agent(tool_timeout=...)``) when
    nobody may be there to answer.
    """

    @tool(name=name, parallel=False)
    async def ask(
        question: str,
        ctx: RunContext[Any],
        options: Options | None = None,
        multi_select: bool = False,
    ) -> str:
        """Ask the human operator a question and wait for the reply. The reply is free text,
        even when options are offered; a cancelled question comes back as a tool error:
        carry on without the answer.

        Args:
            question: the question for the human.
            options: for a choice, 2-4 distinct options, the recommended one first; the human
                may still answer otherwise, so add no 'other' option. Omit for open questions.
            multi_select: true when several options may be picked; the reply then lists the
                chosen labels, one per line.
        """
        asked, future = channel._new_question(
            question,
            options=options or (),
            multi_select=multi_select,
            session_id=ctx.session_id,
            run_id=ctx.run_id,
        )
        try:
            return await future
        finally:
            channel._discard(asked.id)

    return ask
