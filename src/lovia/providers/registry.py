"""Model strings (``"openai:gpt-4.1"``, ``"anthropic:claude-sonnet-4-5"``) to providers."""

from __future__ import annotations

import difflib
import logging
import os
import warnings
from collections.abc import Callable
from typing import Any, Literal, overload

from ..errors import UserError
from .base import Provider

__all__ = [
    "ENTRY_POINT_GROUP",
    "ProviderFactory",
    "check_model",
    "model_from_env",
    "provider_from_string",
    "register_provider",
    "resolve_model",
]

ProviderFactory = Callable[..., Any]
"""``factory(model_name, **overrides) -> Provider``; ``overrides`` are the keywords
``provider_from_string`` was given (``api_key``, ``base_url``, ``supports_vision``,
``extra_body``), and a factory that takes none is fine as long as none are given."""

ENTRY_POINT_GROUP = "lovia.providers"
"""The entry-point group a package declares its model-string prefixes in."""

_REGISTRY: dict[str, ProviderFactory] = {}  # prefixes registered in this process
_ENTRY_POINTS: dict[str, Any] | None = None  # the group's entry points, read once


def register_provider(prefix: str, factory: ProviderFactory) -> None:
    """Make model strings ``"PREFIX:NAME"`` build their provider with ``factory(NAME)``.

    The prefix is case-insensitive; a later registration replaces an earlier one, the
    built-in prefixes (``openai``, ``anthropic`` and their aliases) included.
    """
    if not isinstance(prefix, str) or not prefix.strip() or ":" in prefix:
        raise UserError(
            f"cannot register {prefix!r} as a model prefix",
            hint="pass the part before the colon of the model strings, e.g. 'mistral'",
        )
    if not callable(factory):
        raise UserError(
            f"the factory for prefix {prefix!r} is not callable",
            hint="pass a provider class or a function model_name -> Provider",
        )
    _REGISTRY[prefix.strip().lower()] = factory


def provider_from_string(
    spec: str,
    *,
    api_key: str | None = None,
    base_url: str | None = None,
    supports_vision: bool | None = None,
    extra_body: dict[str, Any] | None = None,
) -> Provider:
    """The provider for the model string ``spec`` (``"openai:gpt-4.1"``, a bare name, ...).

    The keywords override what the provider would read from the environment or infer from
    its host; ``None`` (and an empty ``extra_body``) means not given. Prefixes registered
    with ``register_provider`` come first, then the built-in ones, then the packages that
    declare the prefix in the ``lovia.providers`` entry-point group (these cannot take over
    a built-in prefix).
    """
    if not isinstance(spec, str):
        raise UserError(
            f"a model string must be a str, not {type(spec).__name__}",
            hint="pass a string like 'openai:gpt-4.1'",
        )
    overrides: dict[str, Any] = {
        k: v
        for k, v in (
            ("api_key", api_key),
            ("base_url", base_url),
            ("supports_vision", supports_vision),
        )
        if v is not None
    }
    if extra_body:
        overrides["extra_body"] = dict(extra_body)
    return _from_string(spec, overrides)


def _entry_points() -> dict[str, Any]:
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None:
        from importlib import metadata

        _ENTRY_POINTS = {
            ep.name.lower(): ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)
        }
    return _ENTRY_POINTS


def _plugin_factory(prefix: str) -> ProviderFactory | None:
    """The factory an installed package declares for ``prefix``, loaded (once) on first use."""
    found = _REGISTRY.get(prefix)
    if found is not None:
        return found
    ep = _entry_points().get(prefix)
    if ep is None:
        return None
    try:
        obj = ep.load()
    except Exception as exc:
        raise UserError(
            f"the provider package for prefix {prefix!r} failed to load ({ep.value!r}): {exc}",
            hint="the package is installed but broken: check it imports, or uninstall it",
        ) from exc
    if not callable(obj):
        raise UserError(
            f"the entry point for prefix {prefix!r} ({ep.value!r}) is not a provider class or "
            "callable factory",
            hint="point the entry point at a Provider class or a function model_name -> Provider",
        )
    factory: ProviderFactory = obj
    _REGISTRY[prefix] = factory
    return factory


def resolve_model(model: Any, agent_name: str | None = None) -> Provider:
    """The provider for ``model``: a ``Provider`` as is, a model string, or ``None`` (env).

    A provider built from a string must be usable: without the key its vendor's own API
    needs, this raises that ``UserError`` (a server of your own needs none)."""
    if model is None:
        env = os.environ.get("LOVIA_MODEL")
        if not env:
            raise UserError(
                f"Agent {agent_name!r} has no model configured"
                if agent_name is not None
                else "no model configured for this agent",
                hint="pass Agent(model=...) or set LOVIA_MODEL (e.g. 'openai:gpt-4.1') "
                "with OPENAI_API_KEY, or ANTHROPIC_API_KEY for 'anthropic:...'",
            )
        model = env
    if isinstance(model, str):
        built = _from_string(model, {})
        # A run (and the web/chat startup check) names a missing key before anything starts;
        # provider_from_string and the constructors leave that to the first call, as 0.9.119.
        check = getattr(built, "check_ready", None)
        if check is not None:
            check()
        return built
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
    with a fallback of its own). The string is returned as it is (its vendor may be registered
    later); ``resolve_model`` turns it into its provider and refuses a wrong one.
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
    return value  # checked when an agent runs with it: its vendor may be registered later


_log = logging.getLogger("lovia.providers")

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
    """Look at a model string when an ``Agent`` is built, without building its provider.

    Never raises: an agent that is built but never run must not fail (0.9.119 takes any
    model there, and a string from configuration or a vendor registered later is fine until
    the agent runs); ``resolve_model`` refuses a wrong string, with a hint, when it runs.
    Warns (``UserWarning``) for a bare name that looks like an Anthropic model, on the
    caller's ``Agent(...)`` line.
    """
    if isinstance(model, str) and ":" not in model and _looks_anthropic(model):
        _parse(model, stacklevel=5)


def _parse(spec: str, stacklevel: int = 4) -> tuple[str, str]:
    """``(provider, model name)`` for a model string."""
    prefix, sep, name = spec.partition(":")
    if not sep:
        if spec.strip() == "":
            raise UserError("the model string is empty", hint="use a name like 'openai:gpt-4.1'")
        if _looks_anthropic(spec):
            # logged on lovia.providers as 0.9.119 logs it (filters and tests read that
            # record), and a UserWarning on the caller's line for a script that logs nothing
            _log.warning(
                "provider.no_vendor_prefix: model %r has no provider prefix and goes to an "
                "OpenAI-compatible server; for Anthropic's model write 'anthropic:%s'",
                spec,
                spec,
            )
            warnings.warn(
                f"model {spec!r} has no provider prefix, so it goes to an OpenAI-compatible "
                f"server; for Anthropic's model write 'anthropic:{spec}'",
                UserWarning,
                stacklevel=stacklevel,
            )
        return "openai", spec
    key = prefix.strip().lower()
    provider = _PREFIXES.get(key)
    if provider is None:
        if key not in _REGISTRY and key not in _entry_points():
            raise _unknown_prefix(spec, prefix, name)
        provider = key
    if not name:
        raise UserError(
            f"model string {spec!r} has no model name",
            hint=f"write the model after the colon, e.g. '{prefix}:"
            f"{'claude-sonnet-4-5' if provider == 'anthropic' else 'gpt-4.1'}'",
        )
    return provider, name


def _looks_anthropic(name: str) -> bool:
    return name.strip().lower().startswith(_ANTHROPIC_NAMES)


def _close_prefix(key: str) -> list[str]:
    return difflib.get_close_matches(key, list(_PREFIXES), n=1, cutoff=0.6)


def _unknown_prefix(spec: str, prefix: str, name: str) -> UserError:
    close = _close_prefix(prefix.strip().lower())
    message = f"Unknown model spec: {spec!r}: unknown model provider {prefix!r}"
    if close:
        return UserError(
            f"{message}; did you mean '{close[0]}'?", hint=f"write '{close[0]}:{name}'"
        )
    hint = (
        "use 'openai:NAME' (any OpenAI-compatible server: set OPENAI_BASE_URL for vLLM, Ollama, "
        "OpenRouter, ...) or 'anthropic:NAME'; another vendor's prefix comes from "
        "lovia.providers.register_provider or a package's 'lovia.providers' entry point"
    )
    if name and not name.startswith("/"):
        # "qwen3:8b" is an Ollama tag, not a prefix: its colon belongs to the name.
        hint += f"; for a model whose name has a colon (an Ollama tag) write 'openai:{spec}'"
    return UserError(message, hint=hint)


def _from_string(spec: str, overrides: dict[str, Any]) -> Provider:
    provider, name = _parse(spec)
    key = spec.partition(":")[0].strip().lower() if ":" in spec else ""
    factory = _REGISTRY.get(key) if key else None
    if factory is None and provider not in ("openai", "anthropic"):
        factory = _plugin_factory(provider)
    if factory is not None:
        provider_: Provider = _call_factory(factory, key or provider, name, overrides)
        return provider_
    if provider == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider(name, **overrides)
    from .openai import OpenAIChatProvider

    built = OpenAIChatProvider(name, **overrides)
    if _looks_anthropic(spec) and built._keys.problem is not None:
        # The likely fix is the prefix, not an OpenAI key: say so when the call fails.
        built._keys.problem = UserError(
            f"no API key for {spec!r}: a model name without a prefix goes to OpenAI's API, "
            "which needs OPENAI_API_KEY",
            hint=f"for Anthropic's model write 'anthropic:{spec}' and set ANTHROPIC_API_KEY",
        )
    return built


def _call_factory(
    factory: ProviderFactory, prefix: str, name: str, overrides: dict[str, Any]
) -> Any:
    if not overrides:
        return factory(name)
    try:
        return factory(name, **overrides)
    except TypeError as exc:
        raise UserError(
            f"the provider for prefix {prefix!r} does not accept api_key/base_url/"
            f"supports_vision/extra_body overrides ({', '.join(overrides)}): {exc}",
            hint="build the provider yourself and pass it as Agent(model=...)",
        ) from exc
