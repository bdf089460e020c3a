"""The values workspace calls return, and the size limits of what its tools show the model."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

__all__ = [
    "ClippedList",
    "CommandResult",
    "DirEntry",
    "EditResult",
    "FileBytes",
    "FileChange",
    "FileContent",
    "GrepMatch",
    "ProcessOutput",
    "ProcessStart",
    "ProcessState",
    "ProcessStatus",
    "WorkspaceLimits",
    "WorkspaceMode",
]

WorkspaceMode = Literal["readonly", "coding", "trusted"]
"""A preset policy: ``readonly`` (reads inside the root, no writes, no shell), ``coding``
(the default: writes inside, outside reads and shell commands ask) or ``trusted``."""

ProcessState = Literal["running", "exited", "killed"]

_T = TypeVar("_T")


class FileContent(BaseModel):
    """Text read from a file: lines ``start``..``end`` (1-based, inclusive) of ``total_lines``.
    ``truncated`` says there is more than ``content`` holds (page on with ``start``)."""

    path: str
    content: str
    start: int = Field(ge=1)
    end: int = Field(ge=0)
    total_lines: int
    truncated: bool = False


class FileBytes(BaseModel):
    """A file's raw bytes (an image, say)."""

    path: str
    data: bytes


class FileChange(BaseModel):
    """What a write did: ``created``, ``updated`` or ``unchanged`` (then ``message`` says why)."""

    ok: bool = True
    path: str
    action: Literal["created", "updated", "unchanged"]
    bytes_written: int = 0
    message: str | None = None


class EditResult(BaseModel):
    """What an exact-text edit did; when ``ok`` is false, ``message`` says why and the file is
    as it was."""

    ok: bool
    path: str
    replacements: int = 0
    changed: bool = False
    message: str | None = None


class DirEntry(BaseModel):
    """One listed path: workspace-relative inside the root, absolute outside it.
    ``symlink_target`` is where a symbolic link leads."""

    path: str
    is_dir: bool
    size: int | None = None
    mtime: float | None = None
    symlink_target: str | None = None


class GrepMatch(BaseModel):
    """One matching line (``line`` is 1-based; ``text`` is cut to the grep line limit)."""

    path: str
    line: int = Field(ge=1)
    text: str


class CommandResult(BaseModel):
    """A finished shell command. ``exit_code`` is ``None`` after a timeout and negative when a
    signal ended it (``-9``: SIGKILL); ``truncated`` says output was cut."""

    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        """Whether the command ran to its end and exited 0."""
        return self.exit_code == 0 and not self.timed_out


class ProcessStart(BaseModel):
    """A background process just started: ``process_id`` names it to the other calls."""

    process_id: str
    pid: int
    command: str


class ProcessOutput(BaseModel):
    """One read of a background process: what it wrote (stdout and stderr together) since the
    last read, and its state. ``truncated`` says older unread output was dropped."""

    process_id: str
    status: ProcessState
    exit_code: int | None = None
    output: str = ""
    truncated: bool = False


class ProcessStatus(BaseModel):
    """A background process's state, read without taking its output. ``exit_seen`` says a
    read or a kill has already told a caller how it ended."""

    process_id: str
    command: str
    status: ProcessState
    exit_code: int | None = None
    exit_seen: bool = False


@dataclass(frozen=True)
class WorkspaceLimits:
    """How much the workspace calls return and load.

    The ``*_chars`` limits bound what goes back to the model (a context budget: results are
    paged or cut, and say so); the ``*_bytes`` limits bound what is loaded from disk (a
    memory guard). An agent's ``max_tool_output_chars`` still applies on top of these.
    """

    max_file_read_chars: int = 50_000
    """Characters one ``read_text`` returns; page on with ``start``."""
    max_file_read_bytes: int = 10_000_000
    """Bytes read from a file at most; a bigger file is read in part and says so."""
    max_shell_output_chars: int = 30_000
    """Characters of a command's stdout (and of its stderr) kept, its head and tail; also what
    a background process keeps between two reads (its newest output)."""
    max_grep_file_bytes: int = 5_000_000
    """Files bigger than this are not searched."""
    max_grep_line_chars: int = 400
    """A matching line is cut to this many characters."""
    max_list_results: int = 500
    """Entries ``list_files`` returns unless asked for another number."""
    max_grep_matches: int = 100
    """Matches ``grep`` returns unless asked for another number."""


class ClippedList(list[_T]):
    """A list result that also says, in ``truncated``, whether entries were left out at a cap."""

    truncated: bool

    def __init__(self, items: Iterable[_T] = (), *, truncated: bool = False) -> None:
        super().__init__(items)
        self.truncated = truncated
