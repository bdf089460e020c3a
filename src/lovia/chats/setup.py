"""Startup checks: can the served agents' models be used at all?

A model string whose provider is unknown, or whose API key is missing, fails every run the
same way; ``SetupCheck`` finds that when the server starts (no request is sent to the
model), so the page and ``GET /api/health`` can say what to fix before anyone types. A base
URL that nothing listens on is reported too (a TCP connect, rechecked now and then), but
only as a warning: the server may come up later. A server that listens is asked for its model
list (free: no tokens), and one that answers 401 has refused the API key: every run would
fail, so that blocks; a 403 is only a warning (a key may be allowed to chat but not to list).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .._run.resume import reachable_agents
from ..agent import Agent
from ..errors import LoviaError
from ..providers.registry import resolve_model

__all__ = [
    "SetupCheck",
    "SetupProblem",
    "model_problem",
    "refused_key_problem",
    "server_problem",
    "unreachable_problem",
]

RECHECK_S = 10.0
CONNECT_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class SetupProblem:
    """Why an agent's model cannot be used, and what to do (``blocking``: every run would
    fail, so the page disables its input)."""

    agent: str
    message: str
    hint: str | None
    blocking: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "message": self.message,
            "hint": self.hint,
            "blocking": self.blocking,
        }


def model_problem(agent: Agent) -> SetupProblem | None:
    """The first agent of ``agent``'s handoff graph whose model cannot be built (unknown
    provider, no API key, SDK not installed), or ``None``. Nothing is sent anywhere."""
    for member in reachable_agents(agent).values():
        try:
            resolve_model(member.model)
        except LoviaError as exc:
            return SetupProblem(member.name, exc.message, exc.hint)
    return None


def _base_url(agent: Agent) -> str | None:
    """The base URL an SDK-backed provider of ``agent`` talks to (``None`` for others)."""
    model = agent.model
    if not isinstance(model, str) and model is not None:
        client = getattr(model, "client", None)
    else:
        try:
            client = getattr(resolve_model(model), "client", None)
        except LoviaError:
            return None
    url = getattr(client, "base_url", None)
    return None if url is None else str(url)


async def unreachable_problem(
    agent: Agent, *, timeout: float = CONNECT_TIMEOUT_S
) -> SetupProblem | None:
    """A warning when nothing accepts a TCP connection at the model's base URL."""
    for member in reachable_agents(agent).values():
        url = _base_url(member)
        if not url:
            continue
        parts = urlsplit(url)
        host = parts.hostname
        if not host:
            continue
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            return SetupProblem(
                member.name,
                f"cannot reach the model's server at {url} ({reason})",
                hint="start that server, or fix the base URL (OPENAI_BASE_URL or "
                "ANTHROPIC_BASE_URL; it usually ends in /v1)",
                blocking=False,
            )
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass
    return None


async def refused_key_problem(
    agent: Agent, *, timeout: float = CONNECT_TIMEOUT_S
) -> SetupProblem | None:
    """A problem when the model's server refuses the API key: its model list (``GET
    .../models``, sent as the provider sends its requests, key or no key) answers 401 or 403.
    Any other answer, or none, says nothing about the key: ``None``."""
    for member in reachable_agents(agent).values():
        try:
            provider = resolve_model(member.model)
        except LoviaError:
            continue
        client = getattr(provider, "client", None)
        if client is None or not callable(getattr(getattr(client, "models", None), "list", None)):
            continue  # not an SDK-backed provider (a scripted model, a provider of your own)
        options = getattr(getattr(provider, "_keys", None), "request_options", {})
        try:
            probe = client.with_options(max_retries=0, timeout=timeout)
            await probe.models.list(**options)
        except Exception as exc:  # an SDK's error: only its HTTP status matters here
            status = getattr(exc, "status_code", None)
            if status in (401, 403):
                return _refused(member, provider, str(client.base_url), status, exc)
        finally:
            if isinstance(member.model, str):  # a client built for this probe only
                await _close(client)
    return None


def _refused(member: Agent, provider: Any, url: str, status: int, exc: Exception) -> SetupProblem:
    anthropic = type(provider).__module__.endswith("anthropic")
    key = "ANTHROPIC_API_KEY" if anthropic else "OPENAI_API_KEY"
    said = " ".join(_server_said(exc).split())
    secret = getattr(getattr(provider, "client", None), "api_key", None)
    if isinstance(secret, str) and len(secret) >= 4:  # a server may echo the key it refused
        said = said.replace(secret, "***")
    said = said[:200]
    if status == 401:
        return SetupProblem(
            member.name,
            f"the model's server at {url} refused the API key (HTTP 401: {said})",
            hint=f"set {key} to a key this server accepts (or fix the base URL if it is the "
            "wrong server)",
        )
    return SetupProblem(
        member.name,
        f"the model's server at {url} refused this API key access (HTTP 403: {said})",
        hint=f"check that {key} may use this model (some keys are allowed to chat but not to "
        "list models: then runs still work)",
        blocking=False,
    )


def _server_said(exc: Exception) -> str:
    """The server's own error message (``{"error": {"message": ...}}`` or ``{"message":
    ...}``), else the SDK's text for the error."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str) and message.strip():
            return message
    return str(getattr(exc, "message", "") or exc)


async def _close(client: Any) -> None:
    try:
        await client.close()
    except Exception:  # closing a client made for one probe: nothing to report
        pass


async def server_problem(
    agent: Agent, *, timeout: float = CONNECT_TIMEOUT_S
) -> SetupProblem | None:
    """Whether the model's server can be used: nothing listens there (a warning), or it
    refuses the API key (``refused_key_problem``)."""
    problem = await unreachable_problem(agent, timeout=timeout)
    if problem is None:
        problem = await refused_key_problem(agent, timeout=timeout)
    return problem


class SetupCheck:
    """The setup problems of the served agents: model problems found once, reachability
    rechecked at most every ``RECHECK_S`` seconds."""

    def __init__(self, agents: Mapping[str, Agent], *, probe: bool = True) -> None:
        self.agents = dict(agents)
        self.probe = probe
        self._models: dict[str, SetupProblem | None] = {}
        self._reach: list[SetupProblem] = []
        self._reach_at = -RECHECK_S

    def blocking(self, agent: Agent) -> SetupProblem | None:
        """A problem that makes every run of ``agent`` fail (cached per agent)."""
        if agent.name not in self._models:
            self._models[agent.name] = model_problem(agent)
        return self._models[agent.name]

    async def problems(self) -> list[SetupProblem]:
        """Every known problem, blocking ones first."""
        found = [p for a in self.agents.values() if (p := self.blocking(a)) is not None]
        if self.probe and time.monotonic() - self._reach_at >= RECHECK_S:
            self._reach_at = time.monotonic()
            broken = {p.agent for p in found}
            checks = [server_problem(a) for n, a in self.agents.items() if n not in broken]
            self._reach = [p for p in await asyncio.gather(*checks) if p is not None]
        return found + self._reach
