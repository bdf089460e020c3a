"""The workspace's tools: files, search, the shell and background processes.

Each tool calls the run's workspace session (``ctx.workspace``), which enforces ``deny``;
the ``ask`` side of the policy is each tool's ``needs_approval``, so an ``ask`` goes through
the run's approval channel like any gated tool. Tools that change things run alone
(``parallel=False``) so a turn's writes and commands never interleave.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from ..errors import ToolError
from ..parts import ContentPart, ImagePart, TextPart, image_mime
from ..run_context import RunContext
from ..tools.base import tool
from ._reminder import background_process_reminder
from ._render import (
    render_command_result,
    render_edit_result,
    render_entries,
    render_file_change,
    render_file_content,
    render_matches,
    render_process_output,
)
from .errors import FileTooLargeError
from .policy import FileOp
from .protocol import WorkspaceSession
from .types import (
    CommandResult,
    DirEntry,
    EditResult,
    FileChange,
    FileContent,
    GrepMatch,
    ProcessOutput,
    ProcessStart,
)

__all__ = [
    "VIEW_IMAGE_MAX_BYTES",
    "background_process_reminder",
    "edit_file",
    "grep_files",
    "kill_process",
    "list_files",
    "path_needs_approval",
    "read_file",
    "read_process_output",
    "require_workspace",
    "shell",
    "shell_needs_approval",
    "view_image",
    "write_file",
]

VIEW_IMAGE_MAX_BYTES = 5 * 1024 * 1024
"""The largest image ``view_image`` sends (the strictest provider's per-image limit)."""

_PATH = "Workspace-relative or absolute file path."
_OUTSIDE = (
    "- path is relative to the workspace root (e.g. 'src/app.py') or absolute; paths outside "
    "the workspace may need the user's approval or be refused by policy.\n"
)
_PROCESS_ID = "Process id returned by shell(background=true)."


def require_workspace(ctx: RunContext[Any]) -> WorkspaceSession:
    """The run's workspace session; a ``ToolError`` saying how to configure one if none."""
    found: WorkspaceSession | None = ctx.workspace
    if found is None:
        raise ToolError(
            "No workspace is configured for this run.",
            hint="give the agent one: Agent(workspace=Workspace.local('path/to/root'))",
        )
    return found


def path_needs_approval(*ops: FileOp) -> Callable[[dict[str, Any], RunContext[Any]], bool]:
    """An approval predicate for a tool taking ``path``: true when the policy says ``ask``
    for one of ``ops`` and ``deny`` for none (a denied call fails at the session anyway).
    Without a workspace it is false (the tool then says how to set one up); with one, bad
    arguments or a failing policy ask rather than run unjudged."""

    def needs(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
        session = ctx.workspace
        if session is None:
            return False
        path = args.get("path", ".")
        if not isinstance(path, str):
            return True
        try:
            verdicts = {session.decide_path(path, write=op == "write") for op in ops}
        except Exception:
            return True
        return "ask" in verdicts and "deny" not in verdicts

    return needs


def shell_needs_approval(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
    """Whether a shell call asks first: the session's verdict on its command and cwd (the
    ``description`` and ``background`` arguments never change it)."""
    session = ctx.workspace
    if session is None:
        return False
    command, cwd = args.get("command"), args.get("cwd", ".")
    if not isinstance(command, str) or not isinstance(cwd, str):
        return True
    try:
        return session.decide_command(command, cwd) == "ask"
    except Exception:
        return True


@tool(
    name="read_file",
    description=(
        "Read a UTF-8 text file.\n" + _OUTSIDE + "- Long files come back cut: read in pages "
        "with start/end (1-based line numbers, inclusive).\n"
        "- Read a file before editing it, so edit_file gets its exact text.\n"
        "- Binary and non-UTF-8 files are refused; look at those through the shell (file, "
        "xxd, iconv, ...)."
    ),
    needs_approval=path_needs_approval("read"),
    result_renderer=render_file_content,
)
async def read_file(
    ctx: RunContext[Any],
    path: Annotated[str, _PATH],
    start: Annotated[
        int | None, Field(default=None, ge=1, description="1-based start line.")
    ] = None,
    end: Annotated[
        int | None, Field(default=None, ge=1, description="1-based inclusive end line.")
    ] = None,
) -> FileContent:
    return await require_workspace(ctx).read_text(path, start=start, end=end)


@tool(
    name="view_image",
    description=(
        "Look at an image file: the image itself comes back for you to see.\n"
        + _OUTSIDE.replace("src/app.py", "shots/app.png")
        + "- Supported: jpg, jpeg, png, gif, webp.\n"
        "- Images over 5 MB are refused: make a smaller copy through the shell first, e.g. "
        "`sips -Z 1568 img.png` (macOS) or `magick img.png -resize 1568x1568 small.png`."
    ),
    needs_approval=path_needs_approval("read"),
    returns_images=True,
)
async def view_image(
    ctx: RunContext[Any], path: Annotated[str, "Workspace-relative or absolute image path."]
) -> list[ContentPart]:
    session = require_workspace(ctx)
    mime = image_mime(path)
    if mime is None:
        raise ToolError(
            f"Not a supported image type: {path!r}",
            hint="view_image reads jpg, jpeg, png, gif and webp files",
        )
    try:
        found = await session.read_bytes(path, max_bytes=VIEW_IMAGE_MAX_BYTES)
    except FileTooLargeError as exc:
        raise ToolError(
            exc.message,
            hint=f"make a smaller copy through the shell, e.g. `sips -Z 1568 {path}` (macOS) "
            f"or `magick {path} -resize 1568x1568 small.png`, and view that",
        ) from exc
    data = base64.b64encode(found.data).decode("ascii")
    return [TextPart(found.path), ImagePart(data=data, mime_type=mime)]


@tool(
    name="write_file",
    description=(
        "Create or overwrite a UTF-8 text file with the full content given.\n"
        + _OUTSIDE.replace("may need the user's approval or be refused", "are usually refused")
        + "- Parent directories are made as needed.\n"
        "- For a change to part of an existing file use edit_file: write_file replaces the "
        "whole file, losing whatever you leave out.\n"
        "- Very long content is slow to generate and may be cut off: split it into several "
        "files, or write a skeleton and extend it with edit_file.\n"
        "- create_only=true refuses to overwrite an existing file."
    ),
    needs_approval=path_needs_approval("write"),
    result_renderer=render_file_change,
    parallel=False,
)
async def write_file(
    ctx: RunContext[Any],
    path: Annotated[str, _PATH],
    content: Annotated[str, "Full file content to write."],
    create_only: Annotated[
        bool, Field(default=False, description="If true, never overwrite an existing file.")
    ] = False,
) -> FileChange:
    return await require_workspace(ctx).write_text(path, content, create_only=create_only)


@tool(
    name="edit_file",
    description=(
        "Replace exact text in a file.\n"
        "- old must match the file exactly, whitespace and indentation included: read_file "
        "first and copy the span.\n"
        "- It fails when old is not found, or is found several times without replace_all; "
        "then quote more surrounding lines so it is unique.\n"
        "- Line endings are kept: a file with CRLF endings can be edited with LF text."
    ),
    needs_approval=path_needs_approval("read", "write"),
    result_renderer=render_edit_result,
    parallel=False,
)
async def edit_file(
    ctx: RunContext[Any],
    path: Annotated[str, _PATH],
    old: Annotated[str, "Exact existing text to replace."],
    new: Annotated[str, "Replacement text."],
    replace_all: Annotated[
        bool, Field(default=False, description="Replace every occurrence of old.")
    ] = False,
) -> EditResult:
    return await require_workspace(ctx).edit_text(path, old, new, replace_all=replace_all)


@tool(
    name="list_files",
    description=(
        "List files and directories in the workspace.\n"
        "- Without pattern: the entries of path itself (directories end with '/').\n"
        "- With pattern: the paths below path matching a glob, e.g. '**/*.py' for every "
        "Python file at any depth.\n"
        "- Hidden names (dotfiles) are left out unless include_hidden=true; so are paths the "
        "policy denies.\n"
        "- Long listings are cut at max_results; narrow path or pattern."
    ),
    needs_approval=path_needs_approval("read"),
    result_renderer=render_entries,
)
async def list_files(
    ctx: RunContext[Any],
    path: Annotated[
        str,
        Field(
            default=".",
            description="Directory to list, workspace-relative or absolute "
            "('.' is the workspace root).",
        ),
    ] = ".",
    pattern: Annotated[
        str | None, Field(default=None, description="Optional glob pattern, e.g. '**/*.py'.")
    ] = None,
    include_hidden: Annotated[
        bool, Field(default=False, description="Include dotfiles/directories.")
    ] = False,
    max_results: Annotated[
        int | None,
        Field(
            default=None,
            ge=1,
            le=1000,
            description="Maximum results returned (defaults to the workspace limit, 500).",
        ),
    ] = None,
) -> list[DirEntry]:
    return await require_workspace(ctx).list_files(
        path, pattern=pattern, include_hidden=include_hidden, max_results=max_results
    )


@tool(
    name="grep_files",
    description=(
        "Search file contents in the workspace with a regular expression (Python re "
        "syntax).\n"
        "- Returns matching lines as 'path:line: text', at most max_matches of them.\n"
        "- Narrow the search with path (a directory, or a single file) and glob (file "
        "names, e.g. '*.py'; a glob with '/' matches the path below path).\n"
        "- Binary, very large and hidden files are skipped (include_hidden=true searches "
        "dotfiles too)."
    ),
    needs_approval=path_needs_approval("read"),
    result_renderer=render_matches,
)
async def grep_files(
    ctx: RunContext[Any],
    pattern: Annotated[str, "Regular expression to search for."],
    path: Annotated[
        str, Field(default=".", description="Directory (or single file) to search.")
    ] = ".",
    glob: Annotated[
        str | None,
        Field(default=None, description="Only search files matching this glob, e.g. '*.py'."),
    ] = None,
    ignore_case: Annotated[
        bool, Field(default=False, description="Case-insensitive matching.")
    ] = False,
    include_hidden: Annotated[
        bool, Field(default=False, description="Also search dotfiles/dirs.")
    ] = False,
    max_matches: Annotated[
        int | None,
        Field(
            default=None,
            ge=1,
            le=1000,
            description="Maximum matches returned (defaults to the workspace limit, 100).",
        ),
    ] = None,
) -> list[GrepMatch]:
    return await require_workspace(ctx).grep(
        pattern,
        path=path,
        glob=glob,
        ignore_case=ignore_case,
        include_hidden=include_hidden,
        max_matches=max_matches,
    )


@tool(
    name="shell",
    description=(
        "Run a non-interactive shell command in the workspace.\n"
        "- cwd is relative to the workspace root; quote paths with spaces.\n"
        "- Every call is a new process: a cd or an exported variable does not carry over. "
        "Chain steps with && or set cwd.\n"
        "- There is no terminal and no input: never start editors, REPLs or anything that "
        "prompts (use --yes style flags). A command is killed at its timeout, together with "
        "what it started.\n"
        "- background=true starts the command as a background process and returns its id at "
        "once: the way to run servers, watchers and long builds or test runs. Check it soon "
        "with read_process_output, stop it with kill_process; it has no timeout and ends "
        "with the session.\n"
        "- Output is captured and cut when long: filter it (grep, head, tail).\n"
        "- The paths a command names (arguments, redirections, cwd) are checked by the same "
        "policy as the file tools: the shell is no way around them.\n"
        "- Commands run as the user and are NOT sandboxed: nothing destructive (rm -rf, git "
        "reset --hard, force pushes, ...) unless the user asked for it.\n"
        "- Prefer the file tools to shell equivalents: read_file to cat, grep_files to "
        "grep, list_files to ls or find, edit_file to sed."
    ),
    needs_approval=shell_needs_approval,
    result_renderer=render_command_result,
    parallel=False,
)
async def shell(
    ctx: RunContext[Any],
    command: Annotated[str, "Shell command line to run."],
    cwd: Annotated[str, "Workspace-relative working directory."] = ".",
    timeout: Annotated[
        float | None,
        Field(
            default=None,
            ge=1,
            description="Override timeout in seconds (ignored with background=true).",
        ),
    ] = None,
    background: Annotated[
        bool,
        Field(
            default=False,
            description="Start the command as a background process and return its process "
            "id immediately instead of waiting for it to finish.",
        ),
    ] = False,
    description: Annotated[
        str | None,
        Field(
            default=None,
            description="One short sentence, in the conversation's language, saying what "
            "the command does; shown to the user while it runs. Leave it out for short, "
            "self-explanatory commands.",
        ),
    ] = None,
) -> CommandResult | ProcessStart:
    # description is for people watching; neither the policy nor the command sees it
    session = require_workspace(ctx)
    if background:
        return await session.spawn(command, cwd=cwd)
    return await session.run(command, cwd=cwd, timeout=timeout)


@tool(
    name="read_process_output",
    description=(
        "Read new output of a background process started with shell(background=true).\n"
        "- Returns what it wrote since the last read (stdout and stderr together) and its "
        "state: running, or exited with its exit code.\n"
        "- Returns at once, never waits: if a new process shows nothing yet, do something "
        "else (or sleep briefly in the shell) before reading again.\n"
        "- Reading an exited process is fine: it reports the exit code and the rest of its "
        "output.\n"
        "- Only the newest output is kept between reads (older output is dropped, and the "
        "result says so)."
    ),
    result_renderer=render_process_output,
)
async def read_process_output(
    ctx: RunContext[Any], process_id: Annotated[str, _PROCESS_ID]
) -> ProcessOutput:
    return await require_workspace(ctx).read_process_output(process_id)


@tool(
    name="kill_process",
    description=(
        "Kill a background process started with shell(background=true).\n"
        "- Kills its whole process group (children too) and returns its state and any "
        "unread output.\n"
        "- Killing a process that already ended is not an error: it says how it ended.\n"
        "- Background processes end with the session anyway, but stop what you no longer "
        "need (a server holding a port, a watcher holding files)."
    ),
    result_renderer=render_process_output,
    parallel=False,
)
async def kill_process(
    ctx: RunContext[Any], process_id: Annotated[str, _PROCESS_ID]
) -> ProcessOutput:
    return await require_workspace(ctx).kill_process(process_id)
