"""Where a path a model gives leads, and whether that is inside the workspace root.

Nothing is refused here: a relative, absolute or ``~`` path is resolved (symbolic links
followed, ``..`` applied) and classified; what may be done there is the policy's question.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import WorkspaceError

__all__ = ["ResolvedPath", "resolve_path"]


@dataclass(frozen=True)
class ResolvedPath:
    """A path as given (``raw``), where it leads (``abs``, resolved) and its
    workspace-relative POSIX form (``rel``: ``"."`` for the root, ``None`` outside it)."""

    raw: str
    abs: Path
    rel: str | None

    @property
    def inside(self) -> bool:
        return self.rel is not None

    @property
    def abs_posix(self) -> str:
        return self.abs.as_posix()

    def display(self) -> str:
        """The relative form inside the root, the absolute one outside."""
        return self.rel if self.rel is not None else self.abs.as_posix()


def resolve_path(root: Path, path: str, *, base: Path | None = None) -> ResolvedPath:
    """Resolve ``path`` (relative to ``base``, default the resolved ``root``) and classify it.

    A missing tail is kept as written, so a file about to be created resolves too."""
    if "\x00" in path:
        raise WorkspaceError(
            f"invalid path {path!r}: it contains a NUL character", hint="give a plain path"
        )
    p = Path(path or ".")
    if path.startswith("~"):
        try:
            p = p.expanduser()
        except RuntimeError:  # no home directory: the literal name, which will not exist
            pass
    if not p.is_absolute():
        p = (base if base is not None else root) / p
    try:
        resolved = p.resolve()
    except OSError as exc:  # a link swapped or removed while it was being followed
        raise WorkspaceError(
            f"invalid path {path!r}: it changed while it was being resolved ({exc.strerror})",
            hint="retry once the files stop moving",
        ) from exc
    try:
        rel: str | None = resolved.relative_to(root).as_posix()
    except ValueError:
        rel = None
    return ResolvedPath(raw=path, abs=resolved, rel=rel)
