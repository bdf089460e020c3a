"""A live run as its followers see it: its buffered events, its mailbox and its stop flags.

A live run belongs to the server, not to the HTTP request that started it: its events are
buffered so a reloaded page replays them and then follows the rest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from ..errors import UserError
from ..reliability import CancelToken
from ..steering import Mailbox
from ..stores.run_lease import RunLease

__all__ = ["MAILBOX_LIMIT", "LiveRun", "MailboxFull"]


MAILBOX_LIMIT = 32
"""Messages that may wait in a live run's mailbox; one more is refused (``MailboxFull``)."""


class MailboxFull(UserError):
    """The chat's live run has ``MAILBOX_LIMIT`` messages waiting already (the API answers
    429; the message was not queued)."""


class LiveRun:
    """One run in flight: its buffered events and the clients following them."""

    def __init__(self, chat_id: str, run_id: str, agent_name: str, input_text: str | None):
        self.chat_id = chat_id
        self.run_id = run_id
        self.agent_name = agent_name
        self.input_text = input_text
        self.started_at = time.time()
        self.events: list[dict[str, Any]] = []
        self.done = False
        self.stopping = False
        self.partial_text = ""  # text of the model turn in flight, kept on stop
        self.resumed = False  # a resume of an unfinished run (its message is in its checkpoint)
        self.token = CancelToken()
        self.mailbox = Mailbox()  # messages sent while the run is live join it here
        self.closing = False  # the mailbox was emptied for the last time: no more joins
        self.next_run: LiveRun | None = None  # the run that answers messages it did not see
        self.resumed_by: LiveRun | None = None  # the run a decision resumed this parked one as
        self.claim: RunLease | None = None  # the chat's claim, held until the run is settled
        self.finished = asyncio.Event()
        self._changed = asyncio.Condition()
        self.task: asyncio.Task[None] | None = None
        self.source = "user"  # what started it: "user", "schedule:<id>", ...
        self.park = True  # a call that needs approval waits for a person (else: handler/deny)
        self.context: dict[str, Any] | None = None  # the client's context (run_deps)
        self.served_as = agent_name  # the name the agent is served under (a chat keeps it)

    async def publish(self, event: dict[str, Any], *, last: bool = False) -> int:
        """Add ``event``; returns its number (1-based, as ``follow`` counts)."""
        async with self._changed:
            self.events.append(event)
            seq = len(self.events)
            if last:
                self.done = True
            self._changed.notify_all()
        return seq

    async def follow(self, after: int = 0) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        """Events from number ``after + 1`` on (1-based), until the terminal one. A retry
        notice (``model_retrying``) is current only until the run's next event (the next
        attempt starts, or the run ends): one that has been followed by another is left
        out, so a reconnect after the backoff does not show it (its number still counts)."""
        seen = max(0, after)
        while True:
            async with self._changed:
                while seen >= len(self.events) and not self.done:
                    await self._changed.wait()
                batch = self.events[seen:]
                finished = self.done
            last = len(batch) - 1
            for n, event in enumerate(batch):
                seen += 1
                if n < last and event.get("type") == "model_retrying":
                    continue  # stale: the backoff it announced is over
                yield seen, event
            if finished and seen >= len(self.events):
                return

    def accepts_messages(self) -> bool:
        """Whether a message sent now can still join this run (through its mailbox)."""
        return not (self.done or self.stopping or self.closing or self.token.cancelled)

    async def join(self, text: str, limit: int) -> int:
        """Put ``text`` in the run's mailbox (in its checkpoint before this returns); the
        number of the event that says so. ``MailboxFull`` when ``limit`` messages wait."""
        if len(self.mailbox) >= limit:
            raise MailboxFull(
                f"chat {self.chat_id!r} has {len(self.mailbox)} messages waiting for its "
                "live run already; this one was not sent",
                hint="wait until the run reads them (at its next step) or stop it, then send again",
            )
        token = await self.mailbox.put(text)
        return await self.publish({"type": "user_message_queued", "content": text, "token": token})

    def close_mailbox(self) -> list[Any]:
        """No more joins; the messages that joined too late for the run to see them."""
        self.closing = True
        return self.mailbox.drain()

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "agent_name": self.agent_name,
            "input": self.input_text,
            "started_at": self.started_at,
            "events": len(self.events),
            "source": self.source,
        }
