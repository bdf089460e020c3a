"""What the HTTP providers share: keys from the environment and HTTP errors as lovia errors."""

from __future__ import annotations

import importlib
import os
import re
from typing import Any

from ..errors import ContextOverflowError, ProviderError, UserError

__all__ = ["api_key_from_env", "one_shot_http_client", "status_error", "tool_choice_name"]

# Servers word a context-length rejection differently; these cover OpenAI, Anthropic, vLLM,
# llama.cpp, Ollama and OpenRouter as they answer today.
_OVERFLOW = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|too many tokens"
    r"|exceeds the (?:model'?s? )?(?:maximum|max)|input is too long|context size",
    re.IGNORECASE,
)


def api_key_from_env(explicit: str | None, variable: str, label: str) -> str:
    """``explicit`` or the key in ``variable``; a ``UserError`` naming the variable if neither."""
    key = explicit if explicit is not None else os.environ.get(variable)
    if key:
        return key
    raise UserError(
        f"no API key for the {label} provider",
        hint=f"set {variable} (a local server that does not check keys accepts any value, "
        f"e.g. {variable}=local) or pass api_key=... to the provider",
    )


def status_error(
    where: str, status: int, message: str, *, code: str | None, key_variable: str
) -> ProviderError:
    """The lovia error for an HTTP error answer from ``where`` (``"openai:gpt-4.1"``)."""
    text = f"{where} answered HTTP {status}: {message}"
    if status in (400, 413, 422) and (
        code == "context_length_exceeded" or _OVERFLOW.search(message) is not None
    ):
        return ContextOverflowError(
            text,
            hint="the prompt is larger than the model's context window; use a context policy "
            "such as Compaction(context_window=...) or a model with a larger window",
            status_code=status,
        )
    hint: str | None = None
    if status in (401, 403):
        hint = (
            f"check {key_variable}: the server refused the key (wrong, expired or lacking access)"
        )
    elif status == 404:
        hint = "check the model name and the base URL (it usually ends in /v1)"
    elif status == 429:
        hint = "rate limited; give the agent a RetryPolicy (Agent(retry=RetryPolicy()))"
    elif status >= 500:
        hint = "the server failed; a RetryPolicy on the agent retries such errors"
    return ProviderError(text, hint=hint, status_code=status)


def tool_choice_name(choice: str) -> str | None:
    """The tool name when ``choice`` names one tool, ``None`` for auto/required/none."""
    return None if choice in ("auto", "required", "none") else choice


def one_shot_http_client(sdk: Any, timeout: float) -> Any:
    """An HTTP client for ``sdk`` (the openai or anthropic module) that keeps no idle connection.

    A provider is often shared by runs on different event loops (``run_sync`` twice) or made
    per run from a model string and never closed; pooled idle connections would then belong
    to a dead loop or leak. One connection per model call costs a handshake, which is small
    next to a model call; pass your own ``client=`` to pool connections.
    """
    base = sdk.DefaultAsyncHttpxClient.__mro__[1]
    # The SDK's own httpx flavour (httpx or its fork httpx2) provides the matching Limits.
    httpx_module = importlib.import_module(base.__module__.split(".")[0])
    limits = httpx_module.Limits(max_connections=100, max_keepalive_connections=0)
    return sdk.DefaultAsyncHttpxClient(timeout=timeout, limits=limits)
