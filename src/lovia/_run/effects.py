"""A tool call's identity for the world outside the run: its idempotency key, and the
recorded steps a call keeps in the checkpoint (``ctx.idempotency_key``, ``ctx.step``).

The key is made from the run id and the call's place in the run (the n-th tool call its
model asked for), so every execution of one call (a resume after a crash, a re-submission,
another worker taking the lease over, an approved call run after a restart) has the same
key, and any other call of any run has another. The place is read from the run's stored
entries, which a run only ever appends to.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .._current_call import CURRENT_CALL
from ..errors import UserError
from ..transcript import ToolCallEntry

if TYPE_CHECKING:
    from .run import Run

__all__ = ["CallScope", "call_key", "idempotency_key", "in_call"]


def idempotency_key(run_id: str, place: int) -> str:
    """The key of the ``place``-th tool call (1-based) of run ``run_id``: 32 hex digits."""
    raw = f"lovia-call\x00{run_id}\x00{place}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:32]


def _place(entries: list[Any], call: ToolCallEntry) -> int:
    """The 1-based ordinal of ``call`` among the tool calls in ``entries`` (the entry
    itself, else the latest call with its id)."""
    n = 0
    found = 0
    for e in entries:
        if isinstance(e, ToolCallEntry):
            n += 1
            if e is call:
                return n
            if e.call_id == call.call_id:
                found = n
    if found:
        return found
    raise UserError(f"tool call {call.call_id!r} is not part of this run's transcript")


def call_key(d: Run, call: ToolCallEntry) -> str:
    return idempotency_key(d.run_id, _place(d.state.entries, call))


class CallScope:
    """What ``RunContext`` knows about the tool call running in this task."""

    __slots__ = ("_key", "_seen", "call", "ctx", "d")

    def __init__(self, d: Run, call: ToolCallEntry) -> None:
        self.d = d
        self.ctx = d.ctx
        self.call = call
        self._key: str | None = None
        self._seen: dict[str, int] = {}

    @property
    def key(self) -> str:
        if self._key is None:
            self._key = call_key(self.d, self.call)
        return self._key

    async def step(
        self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if not isinstance(name, str) or not name:
            raise UserError(
                "ctx.step needs a name (a non-empty str)", hint="ctx.step('charge', fn)"
            )
        n = self._seen[name] = self._seen.get(name, 0) + 1
        slot = f"{name}#{n}"
        d = self.d
        done = d.state.steps.get(self.key)
        if done is not None and slot in done:
            return done[slot]
        value = fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        try:
            stored = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise UserError(
                f"the result of step {name!r} cannot be recorded: {exc}",
                hint="a step returns JSON data (dict, list, str, int, float, bool, None)",
            ) from exc
        d.state.steps.setdefault(self.key, {})[slot] = stored
        await d.save()
        return stored


@contextmanager
def in_call(d: Run, call: ToolCallEntry) -> Iterator[CallScope]:
    """``ctx.idempotency_key`` and ``ctx.step`` refer to ``call`` inside this block."""
    scope = CallScope(d, call)
    token = CURRENT_CALL.set(scope)
    try:
        yield scope
    finally:
        CURRENT_CALL.reset(token)
