"""Model strings (``"openai:gpt-4.1"``, ``"anthropic:claude-sonnet-4-5"``) to providers."""

from __future__ import annotations

import os
from typing import Any

from ..errors import UserError
from .base import Provider

__all__ = ["model_from_env", "resolve_model"]


def resolve_model(model: Any) -> Provider:
    """The provider for ``model``: a ``Provider`` as is, a model string, or ``None`` (env)."""
    if model is None:
        env = os.environ.get("LOVIA_MODEL")
        if not env:
            raise UserError(
                "no model configured for this agent",
                hint="pass Agent(model=...) or set LOVIA_MODEL (e.g. 'openai:gpt-4.1') "
                "with OPENAI_API_KEY, or ANTHROPIC_API_KEY for 'anthropic:...'",
            )
        model = env
    if isinstance(model, str):
        return _from_string(model)
    if callable(getattr(model, "stream", None)):  # duck-typed: a runtime Protocol check is slow
        provider: Provider = model
        return provider
    raise UserError(
        f"cannot use {type(model).__name__} as a model",
        hint="pass a model string like 'openai:gpt-4.1' or a Provider instance",
    )


def model_from_env() -> Provider:
    """The provider named by ``LOVIA_MODEL`` (``UserError`` with a hint when unset)."""
    return resolve_model(None)


def _from_string(spec: str) -> Provider:
    prefix, sep, name = spec.partition(":")
    if not sep:
        prefix, name = "openai", spec
    if not name:
        raise UserError(f"model string {spec!r} has no model name", hint="use 'openai:gpt-4.1'")
    if prefix == "openai":
        from .openai import OpenAIChatProvider

        return OpenAIChatProvider(name)
    if prefix == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider(name)
    raise UserError(
        f"unknown model provider {prefix!r} in {spec!r}",
        hint=f"use 'openai:NAME' (any OpenAI-compatible server) or 'anthropic:NAME'; for a "
        f"model whose name has a colon (an Ollama tag) write 'openai:{spec}'",
    )
