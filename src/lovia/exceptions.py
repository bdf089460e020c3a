"""The exception classes under the module name lovia 0.9.119 documents (``lovia.exceptions``).

Everything here is defined in ``lovia.errors``; both names import the same classes.
"""

from __future__ import annotations

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
    UserError,
    UserTypeError,
    UserValueError,
)

__all__ = [
    "ApprovalPending",
    "BudgetExceeded",
    "ContextOverflowError",
    "GuardrailTripped",
    "InvalidToolArguments",
    "LoviaError",
    "MCPError",
    "MaxTurnsExceeded",
    "OutputValidationError",
    "ProviderError",
    "RunBusy",
    "RunCancelled",
    "SchemaError",
    "SessionConflict",
    "StoreError",
    "ToolError",
    "UserError",
    "UserTypeError",
    "UserValueError",
]
