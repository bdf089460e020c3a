"""Context management: what part of the transcript each model call sees."""

from .policy import Compaction, ContextPolicy, ContextRequest, ContextView, NoopContextPolicy

__all__ = ["Compaction", "ContextPolicy", "ContextRequest", "ContextView", "NoopContextPolicy"]
