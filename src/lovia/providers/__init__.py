"""Model providers: the only code that knows a wire format."""

from ..settings import ModelSettings
from .anthropic import AnthropicProvider
from .base import Provider, ToolSpec, supports_vision
from .openai import OpenAIChatProvider
from .registry import model_from_env, provider_from_string, register_provider, resolve_model

__all__ = [
    "AnthropicProvider",
    "ModelSettings",
    "OpenAIChatProvider",
    "Provider",
    "ToolSpec",
    "model_from_env",
    "provider_from_string",
    "register_provider",
    "resolve_model",
    "supports_vision",
]
