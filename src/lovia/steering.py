"""``Mailbox``: messages pushed into a live run, injected at the next turn boundary."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["InjectedContent", "Mailbox"]

InjectedContent = Any
"""A string or a list of content parts, as ``user()`` takes."""


class Mailbox:
    """A FIFO of messages for a running agent.

    ``push`` queues a message and returns a token; ``remove(token)`` withdraws it while it is
    still queued; the run drains the mailbox at the start of each turn, after that turn's
    ``TurnStarted``, and appends each message as a ``user`` entry (event
    ``UserMessageInjected``). Once injected, a message is part of the run's checkpoint;
    ``await put(content)`` makes it durable at once (see ``put``). A push during the run's
    final turn is not seen by that run: drain the mailbox yourself afterwards to feed it
    into the next one.
    """

    __slots__ = ("_items", "_persist", "_seq", "_waiters")

    def __init__(self) -> None:
        self._items: list[tuple[int, InjectedContent]] = []
        self._seq = 0
        self._waiters: list[Any] = []
        self._persist: Callable[[], Awaitable[None]] | None = None

    async def put(self, content: InjectedContent) -> int:
        """``push``, durably: when the mailbox belongs to a live run with a checkpointer,
        returns once the run's checkpoint holds the message (a crash after that loses it
        not: the resumed run reads it at its next turn, once, in order). Without a
        checkpointer, or before the run has started, the message is held in memory only,
        as with ``push`` (written with the run's next save, if it has a checkpointer).
        If the write fails, the message is withdrawn and the error raised."""
        token = self.push(content)
        persist = self._persist
        if persist is not None:
            try:
                await persist()
            except BaseException:
                self.remove(token)
                raise
        return token

    def queued(self) -> list[InjectedContent]:
        """The messages waiting, oldest first (the mailbox is unchanged)."""
        return [content for _, content in self._items]

    def _bind(self, persist: Callable[[], Awaitable[None]] | None) -> None:
        """The run that reads this mailbox writes it with ``persist`` (``None``: unbound)."""
        self._persist = persist

    def _requeue(self, contents: list[InjectedContent]) -> None:
        """Put messages a stored run had not read yet ahead of everything queued."""
        restored = []
        for content in contents:
            self._seq += 1
            restored.append((self._seq, content))
        self._items[:0] = restored

    def push(self, content: InjectedContent) -> int:
        """Queue ``content`` for the next turn; return a token for ``remove``."""
        if not isinstance(content, (str, list)):
            from .errors import UserTypeError

            raise UserTypeError(  # a TypeError, as the run then raised in 0.9.119
                f"Mailbox.push takes a string or a list of parts, got {type(content).__name__}",
                hint="push('the text') or push([TextPart(...), ImagePart(...)])",
            )
        self._seq += 1
        self._items.append((self._seq, content))
        return self._seq

    def remove(self, token: int) -> bool:
        """Withdraw a queued message; ``False`` when it was already drained or is unknown."""
        for i, (tok, _) in enumerate(self._items):
            if tok == token:
                del self._items[i]
                return True
        return False

    def drain(self) -> list[InjectedContent]:
        """Everything queued, oldest first; the mailbox is empty afterwards."""
        items, self._items = self._items, []
        return [content for _, content in items]

    def drain_tokens(self) -> list[tuple[int, InjectedContent]]:
        """Like ``drain`` but with each message's token."""
        items, self._items = self._items, []
        return items

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __repr__(self) -> str:
        return f"Mailbox({len(self._items)} queued)"
