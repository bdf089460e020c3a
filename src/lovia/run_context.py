"""``RunContext``: what tools, hooks, guardrails and dynamic instructions see of a live run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ._current_call import CURRENT_CALL
from ._current_call import idempotency_headers as idempotency_headers  # its old path
from .reliability import CancelToken, RunBudget
from .steering import Mailbox
from .transcript import InputEntry, TranscriptEntry, entries_to_messages
from .usage import Usage

if TYPE_CHECKING:
    from .agent import Agent
    from .messages import Message
    from .workspace.protocol import WorkspaceSession

__all__ = ["CancelToken", "RunContext"]

DepsT = TypeVar("DepsT")


class RunView(Protocol):
    """The slice of a run's mutable state a context reads (the run loop's ``RunState``)."""

    agent: Agent
    usage: Usage
    turn: int
    system_entries: list[TranscriptEntry]
    history: list[TranscriptEntry]
    entries: list[TranscriptEntry]


class _EntriesView(list):  # type: ignore[type-arg]
    """A copy of the transcript that refuses changes: it compares and serialises as the list
    it is, but nothing a tool or hook does to it can change the run."""

    __slots__ = ()

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "RunContext.entries is read-only; the run's transcript changes only by running"
        )

    append = extend = insert = remove = pop = clear = sort = reverse = _read_only
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only


class RunContext(Generic[DepsT]):
    """The live context of a run: the caller's ``deps`` plus views of the run.

    ``workspace`` is the acting agent's live workspace session when it has one
    (``Agent(workspace=...)``): the workspace tools use it, and so can your own. ``deps`` is
    never snapshotted: pass it again when you resume a run. Inside a run,
    ``agent``, ``usage``, ``turn`` and ``entries`` follow the run as it goes on. A context can
    also be built by hand (``RunContext(deps=..., agent=...)``) to call a tool directly in a
    test.
    """

    __slots__ = (
        "_agent",
        "_entries",
        "_state",
        "_turn",
        "_usage",
        "budget",
        "cancel_token",
        "deps",
        "mailbox",
        "run_id",
        "session_id",
        "tracer",
        "workspace",
    )

    def __init__(
        self,
        deps: DepsT | None = None,
        entries: list[TranscriptEntry] | None = None,
        agent: Agent | None = None,
        usage: Usage | None = None,
        session_id: str | None = None,
        run_id: str | None = None,
        turn: int = 0,
        budget: RunBudget | None = None,
        workspace: WorkspaceSession | None = None,
        cancel_token: CancelToken | None = None,
        mailbox: Mailbox | None = None,
        *,
        state: RunView | None = None,
        tracer: Any = None,
    ) -> None:
        self.deps = deps
        self._entries = entries if entries is not None else []
        self._agent = agent
        self._usage = usage if usage is not None else Usage()
        self.session_id = session_id
        self.run_id = run_id
        self._turn = turn
        self.budget = budget
        self.workspace = workspace
        self.cancel_token = cancel_token if cancel_token is not None else CancelToken()
        self.mailbox = mailbox if mailbox is not None else Mailbox()
        self._state = state
        self.tracer = tracer

    @property
    def agent(self) -> Agent:
        """The agent active now (it changes on a handoff)."""
        if self._state is not None:
            return self._state.agent
        if self._agent is None:
            from .errors import UserError

            raise UserError(
                "this RunContext has no agent", hint="build it as RunContext(agent=...)"
            )
        return self._agent

    @property
    def usage(self) -> Usage:
        """Tokens used by the run so far."""
        return self._state.usage if self._state is not None else self._usage

    def _count(self, usage: Usage) -> None:
        """Count ``usage`` (a child run's) in the run's tokens, as a new value."""
        if self._state is not None:
            self._state.usage = self._state.usage + usage
        else:
            self._usage = self._usage + usage

    @property
    def turn(self) -> int:
        """The current turn, 1-based (0 before the first turn)."""
        return self._state.turn if self._state is not None else self._turn

    def _call(self, what: str) -> Any:
        scope = CURRENT_CALL.get()
        if scope is None or scope.ctx is not self:
            from .errors import UserError

            raise UserError(
                f"ctx.{what} is only known while a run is calling a tool",
                hint=f"read ctx.{what} inside the tool (or its on_resume), not in hooks "
                "or outside a run",
            )
        return scope

    @property
    def idempotency_key(self) -> str:
        """A key for the tool call running now: the same on every execution of this call
        (a resume after a crash, a re-submission, another worker taking the run over, an
        approved call run after a restart) and different for every other call, even one
        with the same call id and arguments. Made from ``run_id`` and the call's place in
        the run (32 hex digits), never random. Send it to services that deduplicate by key
        (the ``Idempotency-Key`` header, an MCP request's ``_meta``)."""
        key: str = self._call("idempotency_key").key
        return key

    def step(
        self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> Awaitable[Any]:
        """Run ``fn(*args, **kwargs)`` (sync or async) once for this tool call: its result
        (JSON data) is saved with the run's checkpoint before this returns, and when the
        call runs again (a resume after a crash) a step that completed returns its saved
        result without running. Steps are told apart by ``name`` and, for a name used
        more than once in a call, by their order. A crash after ``fn`` had its effect and
        before the save runs that step again.

        Awaited in an ``async def`` tool. A sync ``fn`` runs on the event loop (pass
        ``asyncio.to_thread, fn`` for a slow one); a sync tool, which runs on a thread,
        cannot take steps (``UserError``)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            from .errors import UserError

            raise UserError(
                f"ctx.step({name!r}, ...) was called from a sync tool (it runs on a thread, "
                "where nothing can be awaited)",
                hint="make the tool 'async def' and 'await ctx.step(...)'; a slow sync "
                "function goes in as ctx.step(name, asyncio.to_thread, fn, ...)",
            ) from None
        pending: Awaitable[Any] = self._call("step").step(name, fn, args, kwargs)
        return pending

    @property
    def entries(self) -> Sequence[TranscriptEntry]:
        """The live transcript: the system entry (if any), session history, then this run's."""
        s = self._state
        if s is None:
            return self._entries
        return _EntriesView((*s.system_entries, *s.history, *s.entries))

    @property
    def messages(self) -> list[Message]:
        """The transcript as chat messages (a new list on each access)."""
        return entries_to_messages(list(self.entries))

    @property
    def system_prompt(self) -> str:
        """The system prompt the model sees in this run ('' when there is none)."""
        entries = self.entries
        first = entries[0] if entries else None
        if isinstance(first, InputEntry) and first.role == "system":
            return first.content if isinstance(first.content, str) else ""
        return ""

    def __repr__(self) -> str:
        name = (
            self._state.agent.name
            if self._state is not None
            else getattr(self._agent, "name", None)
        )
        return f"RunContext(run_id={self.run_id!r}, agent={name!r}, turn={self.turn})"
