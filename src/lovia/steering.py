"""``Mailbox``: messages pushed into a live run, injected at the next turn boundary."""

from __future__ import annotations

from typing import Any

__all__ = ["InjectedContent", "Mailbox"]

InjectedContent = Any
"""A string or a list of content parts, as ``user()`` takes."""


class Mailbox:
    """A FIFO of messages for a running agent.

    ``push`` queues a message and returns a token; ``remove(token)`` withdraws it while it is
    still queued; the run drains the mailbox at the start of each turn, after that turn's
    ``TurnStarted``, and appends each message as a ``user`` entry (event
    ``UserMessageInjected``). Once injected, a message is part of the run's checkpoint. A
    push during the run's final turn is not seen by that run: drain the mailbox yourself
    afterwards to feed it into the next one.
    """

    __slots__ = ("_items", "_seq", "_waiters")

    def __init__(self) -> None:
        self._items: list[tuple[int, InjectedContent]] = []
        self._seq = 0
        self._waiters: list[Any] = []

    def push(self, content: InjectedContent) -> int:
        """Queue ``content`` for the next turn; return a token for ``remove``."""
        if not isinstance(content, (str, list)):
            from .errors import UserError

            raise UserError(
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
