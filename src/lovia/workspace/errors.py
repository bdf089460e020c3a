"""The workspace's errors: each is a ``ToolError``, so a failed file or shell call becomes an
error result the model reads and can act on."""

from __future__ import annotations

from ..errors import ToolError

__all__ = [
    "FileTooLargeError",
    "PermissionDeniedError",
    "WorkspaceClosedError",
    "WorkspaceError",
]


class WorkspaceError(ToolError):
    """A workspace operation failed: a missing file, a bad range, a command that cannot run."""


class PermissionDeniedError(WorkspaceError):
    """The workspace policy refuses the operation (a ``deny`` in its ACL)."""


class WorkspaceClosedError(WorkspaceError):
    """The workspace session was used after ``close()``."""


class FileTooLargeError(WorkspaceError):
    """A file is larger than the byte cap its caller gave (``read_bytes(max_bytes=...)``).

    A class of its own so a caller can say what to do about it (downscale an image, page a
    log), which a generic error cannot know."""
