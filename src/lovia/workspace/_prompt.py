"""The ``## Workspace`` section a workspace adds to the system prompt.

It is written from the policy, so it never promises the model more than the session lets
it do, and from what the root holds (a git repository, a uv or poetry project)."""

from __future__ import annotations

from pathlib import Path

from .policy import Decision, WorkspacePolicy

__all__ = ["SCRATCH_DIR", "workspace_instructions"]

SCRATCH_DIR = "tmp"
"""The one directory name the instructions fix: scratch work goes there, never deliverables."""

_ACCESS = {"allow": "allowed", "ask": "allowed with the user's approval", "deny": "not allowed"}


def _table_header(text: str, name: str) -> bool:
    """Whether a TOML text has a ``[tool.<name>]`` table (or a sub-table of it) as a header
    line, not merely a mention in a comment or a similar name (``[tool.uvicorn]``)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith((f"[tool.{name}]", f"[tool.{name}.")):
            return True
    return False


def package_manager(root: Path) -> str:
    """``"uv"``, ``"poetry"`` or ``"pip"``: which tool manages the root's Python packages."""
    if (root / "uv.lock").is_file():
        return "uv"
    if (root / "poetry.lock").is_file():
        return "poetry"
    try:
        text = (root / "pyproject.toml").read_text("utf-8", "ignore")
    except OSError:
        return "pip"
    for name in ("uv", "poetry"):
        if _table_header(text, name):
            return name
    return "pip"


def _outside(read: Decision, write: Decision) -> str:
    if read == "deny" and write == "deny":
        return "Nothing outside the workspace root can be read or written: stay inside it."
    return (
        f"Outside the workspace root, reading is {_ACCESS[read]} and writing is "
        f"{_ACCESS[write]}. If something you need is refused, ask the user to widen the "
        "workspace rather than looking for a way around it."
    )


def _python(root: Path) -> list[str]:
    lines = [
        "Python belongs in the workspace's own virtualenv: a '.venv' (or 'venv') at the root "
        "with an interpreter in it is put first on PATH for every command (VIRTUAL_ENV is "
        "set), so 'python' is already the workspace's. Never install into the system's "
        "Python."
    ]
    flavor = package_manager(root)
    if flavor == "uv":
        lines.append(
            "This is a uv-managed project: add packages with 'uv pip install <name>' or "
            "install the locked set with 'uv sync'; make the environment with 'uv venv' if "
            "there is none. A uv environment has no pip, so 'pip install' and "
            "'python -m pip' fail here."
        )
    elif flavor == "poetry":
        lines.append(
            "This is a poetry-managed project: 'poetry install' installs the locked set, "
            "'poetry add <name>' adds a package, and 'poetry run ...' runs in its "
            "environment unless that environment is already on PATH."
        )
    else:
        lines.append(
            "'python' and 'pip' already use the virtualenv when there is one; before "
            "installing anything without one, make it: 'python -m venv .venv'."
        )
    return lines


def workspace_instructions(root_path: str, policy: WorkspacePolicy) -> str:
    root = Path(root_path).expanduser().resolve()
    name = root.name or str(root_path)
    lines = [
        "## Workspace",
        f"Your workspace is called {name!r}; its root directory is '.'. Give paths relative "
        "to it ('.', 'docs/plan.md') or absolute, never starting with the workspace's name. "
        "A symbolic link is judged by the place it leads to.",
        "Look around with list_files and grep_files, read a file before you edit it, change "
        "part of a file with edit_file and write whole files with write_file. Long files and "
        "long command output come back cut: read in pages (start/end) or narrow the command.",
    ]
    if policy.write == "deny":
        lines.append("The workspace is read-only: nothing in it can be written or edited.")
    else:
        if policy.write == "ask":
            lines.append(
                "Each write inside the workspace needs the user's approval: make related "
                "changes together rather than a line at a time."
            )
        lines.append(
            f"Keep it tidy: put scratch and intermediate files under '{SCRATCH_DIR}/', which "
            "may be emptied at any time, and do not create files nobody asked for; the answer "
            "goes in your reply unless a file is what was asked for."
        )
        if (root / ".git").exists():
            lines.append(
                "It is a git repository: follow its layout and conventions, leave the tree "
                f"clean, and never commit anything under '{SCRATCH_DIR}/'."
            )
        else:
            lines.append(
                "Put new files where the existing structure says they belong; several "
                "related new files go together in a topical subdirectory, not loose in the "
                "root."
            )
    lines.append(_outside(policy.read_outside, policy.write_outside))
    if policy.denied_paths:
        names = ", ".join(repr(p) for p in policy.denied_paths)
        lines.append(
            f"Paths matching {names} are off-limits: the file tools refuse them, and so does "
            "the shell for any command that names them."
        )
    if policy.allow_shell:
        if policy.shell_default == "allow":
            lines.append(
                "The shell tool runs commands without approval. It is not sandboxed and runs "
                "as the user, so think twice before anything destructive or irreversible."
            )
        else:
            lines.append(
                "The shell tool is gated: some commands need the user's approval and some "
                "are refused by policy."
            )
        lines.append(
            "The paths a command names (arguments, redirections, its cwd) are checked by the "
            "same rules as the file tools: the shell is no way around them, and a command "
            "that needs more access asks for approval."
        )
        lines += _python(root)
    return "\n".join(lines)
