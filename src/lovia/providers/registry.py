"""Model strings (``"openai:gpt-4.1"``, ``"anthropic:claude-sonnet-4-5"``) to providers."""

from __future__ import annotations

import difflib
import os
import warnings
from typing import Any, Literal, overload

from ..errors import UserError
from .base import Provider

__all__ = ["check_model", "model_from_env", "resolve_model"]


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
    if isinstance(model, (list, tuple)):
        raise UserError(
            "an agent takes one model, not a list",
            hint="pass one model; for failover between vendors point base_url at a routing "
            "gateway (LiteLLM, OpenRouter) and use retry=RetryPolicy(...) for transient errors",
        )
    if callable(getattr(model, "stream", None)):  # duck-typed: a runtime Protocol check is slow
        provider: Provider = model
        return provider
    raise UserError(
        f"cannot use {type(model).__name__} as a model",
        hint="pass a model string like 'openai:gpt-4.1' or a Provider instance",
    )


@overload
def model_from_env() -> str: ...
@overload
def model_from_env(*, required: Literal[True]) -> str: ...
@overload
def model_from_env(*, required: bool) -> str | None: ...


def model_from_env(*, required: bool = True) -> str | None:
    """The model string ``LOVIA_MODEL`` holds, for ``Agent(model=model_from_env())``.

    Unset, it raises ``UserError`` with a hint (``required=False``: returns ``None``, for code
    with a fallback of its own). A string with an unknown provider prefix raises here, on the
    caller's line; ``resolve_model`` turns the string into its provider.
    """
    value = os.environ.get("LOVIA_MODEL")
    if not value:
        if not required:
            return None
        raise UserError(
            "no model configured in the environment",
            hint="set LOVIA_MODEL (e.g. 'openai:gpt-4.1', or 'anthropic:claude-sonnet-4-5' "
            "with ANTHROPIC_API_KEY)",
        )
    with warnings.catch_warnings():  # the Agent built with it gives the bare-name warning
        warnings.simplefilter("ignore")
        _parse(value)
    return value


# The prefixes lovia 0.9.119 also reads, by the provider they name.
_PREFIXES = {
    "openai": "openai",
    "openai-chat": "openai",
    "oai": "openai",
    "anthropic": "anthropic",
    "claude": "anthropic",
}
# Model families that are another vendor's: a bare name from these is probably a missing
# prefix, not a model served by an OpenAI-compatible server.
_ANTHROPIC_NAMES = ("claude",)


def check_model(model: Any) -> None:
    """Check a model string without building its provider (no key or network needed).

    Raises ``UserError`` (with a hint naming the fix) for an empty name or an unknown
    prefix, and warns (``UserWarning``) for a bare name that looks like an Anthropic model.
    Anything that is not a string is left to ``resolve_model``.
    """
    if isinstance(model, str):
        _parse(model, stacklevel=5)  # the warning points at the user's Agent(...) line


def _parse(spec: str, stacklevel: int = 4) -> tuple[str, str]:
    """``(provider, model name)`` for a model string."""
    prefix, sep, name = spec.partition(":")
    if not sep:
        if spec.strip() == "":
            raise UserError("the model string is empty", hint="use a name like 'openai:gpt-4.1'")
        if _looks_anthropic(spec):
            warnings.warn(
                f"model {spec!r} has no provider prefix, so it goes to an OpenAI-compatible "
                f"server; for Anthropic's model write 'anthropic:{spec}'",
                UserWarning,
                stacklevel=stacklevel,
            )
        return "openai", spec
    provider = _PREFIXES.get(prefix.strip().lower())
    if provider is None:
        raise _unknown_prefix(spec, prefix, name)
    if not name:
        raise UserError(
            f"model string {spec!r} has no model name",
            hint=f"write the model after the colon, e.g. '{prefix}:"
            f"{'claude-sonnet-4-5' if provider == 'anthropic' else 'gpt-4.1'}'",
        )
    return provider, name


def _looks_anthropic(name: str) -> bool:
    return name.strip().lower().startswith(_ANTHROPIC_NAMES)


def _unknown_prefix(spec: str, prefix: str, name: str) -> UserError:
    close = difflib.get_close_matches(prefix.strip().lower(), list(_PREFIXES), n=1, cutoff=0.6)
    message = f"unknown model provider {prefix!r} in {spec!r}"
    if close:
        return UserError(
            f"{message}; did you mean '{close[0]}'?", hint=f"write '{close[0]}:{name}'"
        )
    hint = (
        "use 'openai:NAME' (any OpenAI-compatible server: set OPENAI_BASE_URL for vLLM, Ollama, "
        "OpenRouter, ...) or 'anthropic:NAME'"
    )
    if name and not name.startswith("/"):
        # "qwen3:8b" is an Ollama tag, not a prefix: its colon belongs to the name.
        hint += f"; for a model whose name has a colon (an Ollama tag) write 'openai:{spec}'"
    return UserError(message, hint=hint)


def _from_string(spec: str) -> Provider:
    provider, name = _parse(spec)
    if provider == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider(name)
    from .openai import OpenAIChatProvider

    if _looks_anthropic(spec) and not os.environ.get("OPENAI_API_KEY"):
        raise UserError(
            f"no API key for {spec!r}: a model name without a prefix goes to an "
            "OpenAI-compatible server, which needs OPENAI_API_KEY",
            hint=f"for Anthropic's model write 'anthropic:{spec}' and set ANTHROPIC_API_KEY",
        )
    return OpenAIChatProvider(name)
