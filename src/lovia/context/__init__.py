"""Context management: what part of the transcript each model call sees."""

from ._render import clear_marker, offload_marker, summary_entry
from .compaction import Compaction, Summarizer
from .policy import (
    CompactionRequest,
    ContextPolicy,
    ContextRequest,
    ContextResult,
    ContextView,
    NoopContextPolicy,
)
from .prompts import REQUIRED_SECTIONS, SUMMARY_SYSTEM_PROMPT, SUMMARY_WRAPPER
from .recall import RECALL_TOOL_NAME, make_recall_tool
from .render import render_view
from .results import FileResultStore, InMemoryResultStore, ResultStore, content_digest
from .stages import (
    ClearToolResults,
    OffloadToolResults,
    Stage,
    StageContext,
    SummarizeHistory,
)
from .state import CompactionState, OffloadRecord, SummaryState
from .summarizer import LLMSummarizer, transcript_to_text
from .tokens import TokenBudget, TokenCounter, estimate_tokens

__all__ = [
    "RECALL_TOOL_NAME",
    "REQUIRED_SECTIONS",
    "SUMMARY_SYSTEM_PROMPT",
    "SUMMARY_WRAPPER",
    "ClearToolResults",
    "Compaction",
    "CompactionRequest",
    "CompactionState",
    "ContextPolicy",
    "ContextRequest",
    "ContextResult",
    "ContextView",
    "FileResultStore",
    "InMemoryResultStore",
    "LLMSummarizer",
    "NoopContextPolicy",
    "OffloadRecord",
    "OffloadToolResults",
    "ResultStore",
    "Stage",
    "StageContext",
    "SummarizeHistory",
    "Summarizer",
    "SummaryState",
    "TokenBudget",
    "TokenCounter",
    "clear_marker",
    "content_digest",
    "estimate_tokens",
    "make_recall_tool",
    "offload_marker",
    "render_view",
    "summary_entry",
    "transcript_to_text",
]
