"""Model providers: the only code that knows a wire format."""

from .base import Provider, ToolSpec
from .registry import model_from_env, resolve_model

__all__ = ["Provider", "ToolSpec", "model_from_env", "resolve_model"]
