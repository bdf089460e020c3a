"""Context management: what part of the transcript each model call sees."""

from .compaction import Compaction, Summarizer
from .policy import (
    CompactionRequest,
    ContextPolicy,
    ContextRequest,
    ContextResult,
    ContextView,
    NoopContextPolicy,
)
from .recall import RECALL_TOOL_NAME, make_recall_tool
from .results import FileResultStore, InMemoryResultStore, ResultStore, content_digest
from .state import CompactionState, OffloadRecord, SummaryState
from .tokens import TokenBudget, estimate_tokens

__all__ = [
    "RECALL_TOOL_NAME",
    "Compaction",
    "CompactionRequest",
    "CompactionState",
    "ContextPolicy",
    "ContextRequest",
    "ContextResult",
    "ContextView",
    "FileResultStore",
    "InMemoryResultStore",
    "NoopContextPolicy",
    "OffloadRecord",
    "ResultStore",
    "Summarizer",
    "SummaryState",
    "TokenBudget",
    "content_digest",
    "estimate_tokens",
    "make_recall_tool",
]
