"""lovia: LLM agents with durable state.

Sessions remember conversations across runs and processes; checkpoints let a crashed run
resume and a re-submitted run replay, without losing or duplicating work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import approvals, events
from ._run.handle import RunHandle
from ._run.result import RunResult
from ._run.runner import Runner
from ._version import __version__ as __version__
from .agent import Agent
from .context import (
    Compaction,
    ContextPolicy,
    FileResultStore,
    InMemoryResultStore,
    NoopContextPolicy,
    ResultStore,
)
from .errors import (
    ApprovalPending,
    BudgetExceeded,
    ContextOverflowError,
    GuardrailTripped,
    InvalidToolArguments,
    LoviaError,
    MaxTurnsExceeded,
    MCPError,
    OutputValidationError,
    ProviderError,
    RunBusy,
    RunCancelled,
    SchemaError,
    SessionConflict,
    StoreError,
    ToolError,
    ToolTimeoutError,
    UserError,
    UserTypeError,
    UserValueError,
)
from .handoffs import Handoff
from .hooks import AgentHooks
from .log_config import enable_logging
from .messages import Message, ToolCall, assistant, system, tool_message, user
from .parts import FilePart, ImagePart, TextPart
from .plugins import (
    Memory,
    OpenAIEmbedder,
    Plugin,
    PluginInstance,
    SkillNotFoundError,
    Skills,
    SkillsError,
    Subagents,
    Todo,
)
from .providers.base import Provider
from .providers.registry import model_from_env
from .reliability import CancelToken, RunBudget
from .run_context import RunContext
from .settings import ModelSettings, RetryPolicy
from .steering import Mailbox
from .stores.checkpoint import Checkpointer, RunHead, RunSnapshot, RunStatus
from .stores.maintenance import SessionHistory
from .stores.memory import InMemoryCheckpointer, InMemorySession
from .stores.run_options import CheckpointOptions
from .stores.session_protocol import Segment, Session
from .tools import Tool, tool
from .transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    drop_dangling_tool_calls,
    entry_from_dict,
    entry_to_dict,
)
from .usage import Usage

if TYPE_CHECKING:
    from .providers.anthropic import AnthropicProvider
    from .providers.openai import OpenAIChatProvider
    from .stores.postgres import PostgresCheckpointer, PostgresSession
    from .stores.sqlite import SQLiteCheckpointer, SQLiteSession

__all__ = [
    "Agent",
    "AgentHooks",
    "AnthropicProvider",
    "ApprovalPending",
    "AssistantTextEntry",
    "BudgetExceeded",
    "CancelToken",
    "CheckpointOptions",
    "Checkpointer",
    "Compaction",
    "ContextOverflowError",
    "ContextPolicy",
    "FilePart",
    "FileResultStore",
    "GuardrailTripped",
    "Handoff",
    "ImagePart",
    "InMemoryCheckpointer",
    "InMemoryResultStore",
    "InMemorySession",
    "InputEntry",
    "InvalidToolArguments",
    "LoviaError",
    "MCPError",
    "Mailbox",
    "MaxTurnsExceeded",
    "Memory",
    "Message",
    "ModelSettings",
    "NoopContextPolicy",
    "OpenAIChatProvider",
    "OpenAIEmbedder",
    "OutputValidationError",
    "Plugin",
    "PluginInstance",
    "PostgresCheckpointer",
    "PostgresSession",
    "Provider",
    "ProviderError",
    "ReasoningEntry",
    "ResultStore",
    "RetryPolicy",
    "RunBudget",
    "RunBusy",
    "RunCancelled",
    "RunContext",
    "RunHandle",
    "RunHead",
    "RunResult",
    "RunSnapshot",
    "RunStatus",
    "Runner",
    "SQLiteCheckpointer",
    "SQLiteSession",
    "SchemaError",
    "Segment",
    "Session",
    "SessionConflict",
    "SessionHistory",
    "SkillNotFoundError",
    "Skills",
    "SkillsError",
    "StoreError",
    "Subagents",
    "TextPart",
    "Todo",
    "Tool",
    "ToolCall",
    "ToolCallEntry",
    "ToolError",
    "ToolResultEntry",
    "ToolTimeoutError",
    "TranscriptEntry",
    "Usage",
    "UserError",
    "UserTypeError",
    "UserValueError",
    "approvals",
    "assistant",
    "drop_dangling_tool_calls",
    "enable_logging",
    "entry_from_dict",
    "entry_to_dict",
    "events",
    "model_from_env",
    "system",
    "tool",
    "tool_message",
    "user",
]

_LAZY = {
    "AnthropicProvider": "lovia.providers.anthropic",
    "OpenAIChatProvider": "lovia.providers.openai",
    "SQLiteSession": "lovia.stores.sqlite",
    "SQLiteCheckpointer": "lovia.stores.sqlite",
    "PostgresSession": "lovia.stores.postgres",
    "PostgresCheckpointer": "lovia.stores.postgres",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lovia' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, the lazily imported stores and providers among them (``dir(lovia)``
    and editors' completion list what ``from lovia import ...`` can take)."""
    return sorted({*__all__, "__version__", *(k for k in globals() if k.startswith("__"))})


# LOVIA_LOG=info in the environment turns lovia's run narrative on without code
from .log_config import enable_logging_from_env as _enable_logging_from_env  # noqa: E402

_enable_logging_from_env()
