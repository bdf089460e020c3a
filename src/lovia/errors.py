"""The one exception tree of lovia.

::

    LoviaError                      base; every error has a message and an optional ``hint``
    ├── UserError                   misuse or configuration: fix the calling code
    │   ├── UserValueError          an argument of the right type but a bad value (a ValueError)
    │   └── UserTypeError           an argument of the wrong type (a TypeError)
    ├── ApprovalPending             a run parked until a person decides on its tool calls
    ├── ProviderError               the model endpoint failed or answered badly
    │   └── ContextOverflowError    the prompt did not fit the model's context window
    ├── ToolError                   a tool could not be built or run as declared
    │   └── InvalidToolArguments    the model sent arguments that do not fit the schema
    ├── MaxTurnsExceeded            the run used up ``max_turns``
    ├── BudgetExceeded              the run went over its ``RunBudget``
    ├── RunCancelled                the run was cancelled through its ``CancelToken``
    ├── GuardrailTripped            an input or output guardrail refused the run
    ├── OutputValidationError       the final output does not fit ``output_type``
    ├── RunBusy                     another worker holds the lease on this ``run_id``
    ├── MCPError                    an MCP server could not be reached or broke the protocol
    └── StoreError                  a stored record could not be read or written
        ├── SchemaError             a database file is not lovia's, or is newer than this code
        └── SessionConflict         another run changed the session after this run loaded it

Foreign exceptions are re-raised as one of these ``from`` the original at the boundary
where they enter lovia (a store, a provider), so callers catch one tree.
"""

from __future__ import annotations

from typing import Any


class LoviaError(Exception):
    """Base class of every error lovia raises on purpose.

    ``hint`` says what to try next; ``str(error)`` shows it on a second line. Extra keyword
    arguments become attributes (``ProviderError(..., status_code=429)``).

    ``exit_status`` is the status the ``lovia`` command exits with when the error ends it:
    2 by default; a subclass sets its own (``class Diverged(LoviaError): exit_status = 1``),
    or one error gets its own with ``LoviaError(..., exit_status=3)``.
    """

    hint: str | None
    exit_status: int = 2

    def __init__(self, message: str = "", *, hint: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        for key, value in extra.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}\n  hint: {self.hint}" if self.message else self.hint
        return self.message

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe description, as stored in a failed run's head: ``type`` and ``message``
        (the two keys 0.9.119 stores), and ``hint`` when there is one."""
        out: dict[str, Any] = {"type": type(self).__name__, "message": self.message}
        if self.hint is not None:
            out["hint"] = self.hint
        return out


class UserError(LoviaError):
    """The calling code used lovia wrongly (bad argument, missing configuration)."""


class UserValueError(UserError, ValueError):
    """A bad argument value (a negative count, say). Also a ``ValueError``, which lovia
    0.9.119 raised there, so ``except ValueError`` in code written for it still catches it."""


class UserTypeError(UserError, TypeError):
    """An argument of the wrong type. Also a ``TypeError``, what a plain Python function
    raises there, so ``except TypeError`` still catches it."""


class ProviderError(LoviaError):
    """The model provider failed: transport error, bad status, malformed stream.

    ``vendor``, ``model``, ``status_code`` and ``retryable`` say more when known.
    """

    vendor: str | None = None
    model: str | None = None
    status_code: int | None = None
    retryable: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """Also ``status_code`` and ``retryable`` (``None`` when unknown), so a stored
        failure says whether trying again can work."""
        return {
            **super().to_dict(),
            "status_code": self.status_code,
            "retryable": self.retryable,
        }


class ContextOverflowError(ProviderError):
    """The request did not fit the model's context window (``reported_window`` if the
    endpoint named it)."""

    reported_window: int | None = None


class ToolError(LoviaError):
    """A tool is declared wrongly, or a tool wants to tell the model about a failure.

    Raised inside a tool, its message becomes the error result the model sees.
    """

    tool_name: str | None = None


class ToolTimeoutError(ToolError, TimeoutError):
    """A tool call that outlived its ``timeout``: a ``ToolError`` here, and the
    ``TimeoutError`` 0.9.119 reported (``except TimeoutError`` keeps catching it)."""


class InvalidToolArguments(ToolError):
    """The model's arguments for a tool do not validate against its schema."""


class MaxTurnsExceeded(LoviaError):
    """The run reached ``max_turns`` without a final answer."""


class BudgetExceeded(LoviaError):
    """The run went over a limit of its ``RunBudget`` (tokens, tool calls or seconds)."""


class RunCancelled(LoviaError):
    """The run was cancelled (``CancelToken.cancel`` or ``RunHandle.cancel``)."""

    def __init__(
        self, message: str = "the run was cancelled", *, hint: str | None = None, **extra: Any
    ) -> None:
        super().__init__(message, hint=hint, **extra)


class GuardrailTripped(LoviaError):
    """A guardrail refused the input or the output.

    ``reason`` is the refusal; ``guardrail`` names the guardrail callable when it tripped by
    its verdict (a guardrail that raises sets what it likes). A refusal is the answer, not a
    mistake to fix, so it carries no hint unless the guardrail gives one.
    """

    guardrail: str | None = None

    def __init__(
        self,
        message: str = "",
        *,
        hint: str | None = None,
        reason: str | None = None,
        **extra: Any,
    ) -> None:
        # 0.9.119 names the first argument ``message`` (``GuardrailTripped(message=...)``);
        # ``reason=`` is kept as another name for it.
        text = message or (reason or "")
        super().__init__(text, hint=hint, **extra)
        self.reason = text


class OutputValidationError(LoviaError):
    """The model's final answer does not validate against the agent's ``output_type``
    (``raw`` holds the answer, ``output_type_name`` the expected type)."""

    raw: str | None = None
    output_type_name: str | None = None


class ApprovalPending(LoviaError):
    """The run is parked: tool calls wait for a person's decision.

    ``run_id`` names the run; ``calls`` are the undecided ``ToolCall`` objects (their
    ``arguments`` as raw JSON text). Decide with ``lovia.approvals.decide`` from any process,
    then re-submit the run to resume it.
    """

    run_id: str = ""
    calls: list[Any]

    pending: list[Any]

    def __init__(
        self,
        message: str = "",
        *,
        hint: str | None = None,
        run_id: str = "",
        calls: Any = (),
        pending: Any = (),
    ) -> None:
        super().__init__(
            message, hint=hint, run_id=run_id, calls=list(calls), pending=list(pending)
        )


class MCPError(LoviaError):
    """An MCP server could not be started or reached, or broke the protocol
    (``tool_name`` names the tool being called, when there was one)."""

    tool_name: str | None = None


class RunBusy(LoviaError):
    """Another worker drives this ``run_id`` (it holds the run's lease), or took it over."""


class StoreError(LoviaError):
    """A session or checkpoint store could not read or write a record."""


class SchemaError(StoreError):
    """A database is not a lovia database, or was written by a newer lovia."""


class SessionConflict(StoreError):
    """Another run changed the session after this run loaded it; nothing was written.

    Raised by a built-in session's ``append(..., expected_version=...)`` when the session's
    version moved on, so two runs started together cannot both extend one conversation
    without either seeing the other. ``session_id``, ``expected_version`` and
    ``current_version`` say which session and which versions.
    """

    def __init__(
        self,
        message: str = "",
        *,
        hint: str | None = None,
        session_id: str | None = None,
        expected_version: int | None = None,
        current_version: int | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.session_id = session_id
        self.expected_version = expected_version
        self.current_version = current_version


def error_from_dict(data: dict[str, Any]) -> LoviaError:
    """Rebuild a stored error description (best effort: unknown types become ``LoviaError``)."""
    cls = _BY_NAME.get(str(data.get("type")), LoviaError)
    message = str(data.get("message", ""))
    hint = data.get("hint")
    err: LoviaError
    if cls is GuardrailTripped:
        err = GuardrailTripped(message, hint=hint)
    elif cls is RunCancelled:
        err = RunCancelled(message, hint=hint)
    else:
        err = cls(message, hint=hint)
    return err


_BY_NAME: dict[str, type[LoviaError]] = {
    c.__name__: c
    for c in (
        LoviaError,
        UserError,
        ProviderError,
        ContextOverflowError,
        ToolError,
        InvalidToolArguments,
        MaxTurnsExceeded,
        BudgetExceeded,
        RunCancelled,
        GuardrailTripped,
        OutputValidationError,
        ApprovalPending,
        MCPError,
        RunBusy,
        StoreError,
        SchemaError,
        SessionConflict,
    )
}
