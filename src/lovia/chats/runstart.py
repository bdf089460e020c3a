"""What a surface says about a run it starts (``RunStart``), and who hears of each run's start
and end (``RunObserver``): the web server's run records and lifecycle events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .live import LiveRun

__all__ = ["RunObserver", "RunStart"]


@dataclass
class RunStart:
    """How to start one run: ``source`` says why (``"user"``, ``"schedule:<id>"``...);
    ``park=False`` leaves a call that needs approval to the agent's ``approval_handler``,
    else refuses it (no person will decide: a blocking request, a schedule); ``input``
    replaces the message text as the run's input (a message with attachments); ``deps`` is
    the run's ``RunContext.deps`` and ``context`` the client context it was made from;
    ``options`` are more ``Runner.stream`` options for this run; ``enter`` sets the run's
    context vars in its own task's context (the web server's: the chat for ``put_ui_data``,
    the server and client context for its tools)."""

    source: str = "user"
    park: bool = True
    input: Any = None
    deps: Any = None
    context: dict[str, Any] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    # sets the run's context vars, in the context its task runs in (never the caller's)
    enter: Callable[[], None] | None = None


class RunObserver(Protocol):
    """Told when a run of the supervisor starts and when it has ended (and been settled)."""

    async def on_start(self, run: LiveRun) -> None: ...

    async def on_end(self, run: LiveRun, terminal: dict[str, Any]) -> None: ...
