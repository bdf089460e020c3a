"""Background subagents under the web server: a finished task's report reaches its chat.

``wire_subagents(deps)`` gives each served ``Subagents`` plugin left on its defaults (no
``deliver`` of its own) the server's delivery, ``subagent_deliver(deps)``: the report joins
the chat's live run (read at its next step), or, when none is live, starts a run of the chat
that reads it (source ``subagent-report:<task>``). ``create_app`` wires them itself
(``wire_subagents=False`` leaves them alone); an app that mounts ``build_api_router``
calls it once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..chats.supervisor import ChatBusy

if TYPE_CHECKING:
    from .deps import RouterDeps

__all__ = ["subagent_deliver", "subagent_runner", "wire_subagents"]

log = logging.getLogger("lovia.web")
_RETRIES = (0.0, 0.5, 2.0, 5.0)


def _report_text(report: Any) -> str:
    text = getattr(report, "text", None)
    if isinstance(text, str):
        return text
    result = getattr(report, "result", None)
    output = getattr(result, "output", None)
    task = getattr(report, "id", "?")
    return f"[subagent {task} finished]\n{output if output is not None else ''}"


def subagent_deliver(deps: RouterDeps) -> Callable[[Any], Awaitable[None]]:
    """The delivery of subagent reports for ``deps``' chats (inject, else start a run)."""

    async def deliver(report: Any) -> None:
        chat_id = getattr(report, "session_id", None)
        if not chat_id:
            log.info("a subagent report without a chat was dropped")
            return
        text = _report_text(report)
        sup = deps.supervisor
        for delay in _RETRIES:
            await asyncio.sleep(delay)
            live = sup.live.get(chat_id)
            if live is not None and live.accepts_messages():
                live.mailbox.push(text)
                return
            if await deps.store.get(chat_id) is None:
                log.info("the chat of a subagent report is gone; the report was dropped")
                return
            meta = await deps.store.get(chat_id)
            agent = sup.agent(meta.agent if meta and meta.agent in deps.agents else None)
            source = f"subagent-report:{getattr(report, 'id', '?')}"

            async def start(agent: Any = agent, source: str = source) -> Any:
                return await deps.run_start(chat_id, agent, source=source, park=False)

            try:
                await sup.send(chat_id, text, agent_name=sup.served_name(agent), start=start)
                return
            except ChatBusy:
                continue  # a run is just ending, or another server has the chat: again
        log.warning("a subagent report for chat %s could not be delivered", chat_id)

    return deliver


def subagent_runner(deps: RouterDeps) -> Callable[[Any], Awaitable[Any]]:
    """How a served ``Subagents`` child runs: as a chat of its own under its parent's (listed
    with the parent's children, deleted with it), its transcript in the server's session
    store and every step checkpointed there, with a run record (source
    ``subagent:<task>``) and the lifecycle events of any run."""

    async def run_child(spec: Any) -> Any:
        import time
        import uuid

        from ..agent import _runtime
        from ..stores.run_options import CheckpointOptions
        from .store import RunRow

        store = deps.store
        parent = spec.parent_session_id
        if parent is not None and await store.get(parent) is None:
            parent = None  # a run of a program's own session: the child stands alone
        chat_id = f"{parent or 'task'}.{spec.id}.{uuid.uuid4().hex[:8]}"
        run_id = uuid.uuid4().hex
        agent = spec.agent
        if agent.approval_handler is None:  # nobody can answer an approval in a child
            agent = agent.clone(approval_handler=_refuse)
        await store.upsert(chat_id, agent=agent.name, title=spec.prompt, parent_id=parent)
        source = f"subagent:{spec.id}"
        await store.start_run(
            RunRow(run_id, chat_id, agent.name, source, "running", None, time.time(), None, None)
        )
        deps.emit(
            "run_started",
            {"session_id": chat_id, "run_id": run_id, "agent": agent.name, "source": source},
        )
        status, error, usage = "failed", None, None
        try:
            result = await _runtime().run(
                agent,
                spec.prompt,
                session=store.session,
                session_id=chat_id,
                checkpoint=CheckpointOptions(store.checkpointer, run_id),
                max_turns=spec.max_turns,
                budget=spec.budget,
                cancel_token=spec.token,
                mailbox=spec.mailbox,
            )
            status, usage = "completed", result.usage.to_dict()
            return result
        except (asyncio.CancelledError, Exception) as exc:
            status = (
                "cancelled" if type(exc).__name__ in ("RunCancelled", "CancelledError") else status
            )
            error = None if status == "cancelled" else str(exc) or type(exc).__name__
            raise
        finally:
            await store.finish_run(run_id, status=status, error=error, usage=usage)
            await store.upsert(chat_id)
            deps.emit(
                "run_finished",
                {
                    "session_id": chat_id,
                    "run_id": run_id,
                    "status": status,
                    "error": error,
                    "source": source,
                },
            )

    return run_child


def _refuse(call: Any, ctx: Any) -> str:
    return "deny"


def wire_subagents(deps: RouterDeps) -> int:
    """Give the served agents' ``Subagents`` plugins (left on their defaults: no ``deliver``
    and no ``run_child`` of their own) the server's delivery, and run their children as
    chats of the server (``subagent_runner``); returns how many were wired."""
    deliver = subagent_deliver(deps)
    runner = subagent_runner(deps)
    wired: set[int] = set()
    for agent in deps.agents.values():
        for plugin in agent.plugins or ():
            if (
                getattr(plugin, "name", None) == "subagents"
                and hasattr(plugin, "deliver")
                and plugin.deliver is None
                and getattr(plugin, "run_child", None) is None
                and id(plugin) not in wired
            ):
                plugin.deliver = deliver
                plugin.run_child = runner
                wired.add(id(plugin))
    return len(wired)
