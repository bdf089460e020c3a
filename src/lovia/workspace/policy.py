"""What a workspace may do: one three-valued ACL (``allow`` / ``ask`` / ``deny``) for paths and
for shell commands.

Paths are judged after they are resolved (symbolic links followed), so a link is exactly as
reachable as the place it leads to. The order is ``denied_paths``, then the first matching
``PathRule``, then the defaults: inside the root reads are allowed and writes follow
``write``; outside, ``read_outside`` and ``write_outside`` apply.

Commands are judged per simple command (see ``_shellwords``): ``command_decider`` first, then
the first ``CommandRule`` whose words start the command, then ``shell_default``; the most
restrictive verdict of all of a line's commands wins. The session adds the paths a command
names (``command_guard``). All of it is lexical: a policy gate for an honest model and a
careful operator, not a sandbox (the ``ShellExecutor`` seam is where one plugs in).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Literal, get_args

from ..errors import UserError
from ._shellwords import command_words, inner_commands, nested_segments, plain_segments

__all__ = [
    "CommandDecider",
    "CommandRule",
    "Decision",
    "FileOp",
    "PathRule",
    "WorkspacePolicy",
    "merge_decisions",
]

Decision = Literal["allow", "ask", "deny"]
FileOp = Literal["read", "write"]
CommandDecider = Callable[[str], "Decision | None"]
"""``decider(segment) -> Decision | None``: a verdict for one simple command, or ``None`` to
leave it to the rules. Anything else it returns is ignored."""

_RANK: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
_DECISIONS = frozenset(get_args(Decision))
_MAX_NESTING = 8  # sh -c 'sh -c ...' deeper than this is refused, not judged


def merge_decisions(*decisions: Decision) -> Decision:
    """The most restrictive of ``decisions`` (``allow`` when there are none)."""
    result: Decision = "allow"
    for d in decisions:
        if _RANK[d] > _RANK[result]:
            result = d
    return result


def _check_decision(value: object, what: str) -> None:
    if value not in _DECISIONS:
        raise UserError(
            f"{what} must be 'allow', 'ask' or 'deny', got {value!r}",
            hint="allow runs freely, ask goes to an approval, deny refuses",
        )


# -- path patterns ---------------------------------------------------------------------------


def _path_matches(rel_path: str, pattern: str) -> bool:
    """Whether a workspace-relative POSIX path matches ``pattern``: a pattern with ``/``
    against the whole path (and everything under it), a bare one against any one segment
    (``.env*`` matches ``config/.env.local``; ``secrets`` everything under a ``secrets``)."""
    pat = pattern.rstrip("/")
    if not pat:
        return False
    if "/" in pat:
        return fnmatchcase(rel_path, pat) or fnmatchcase(rel_path, pat + "/*")
    return any(fnmatchcase(part, pat) for part in rel_path.split("/"))


@lru_cache(maxsize=1024)
def _absolute_pattern(pattern: str) -> str | None:
    """An absolute or ``~`` pattern as the resolved path it names (its existing part's
    symbolic links followed, so ``/etc/x`` still matches where ``/etc`` is a link)."""
    text = pattern
    if text.startswith("~"):
        try:
            text = str(Path(text).expanduser())
        except RuntimeError:  # no home directory to expand to
            return None
    try:
        text = Path(text).resolve().as_posix()
    except (OSError, ValueError):
        pass
    return text.rstrip("/") or None


def _pattern_matches(pattern: str, *, rel: str | None, abs_posix: str) -> bool:
    if pattern.startswith(("/", "~")):
        pat = _absolute_pattern(pattern)
        return pat is not None and (
            fnmatchcase(abs_posix, pat) or fnmatchcase(abs_posix, pat + "/*")
        )
    if rel is not None:
        return _path_matches(rel, pattern)
    if "/" not in pattern.rstrip("/"):  # a bare name means that name outside the root too
        return _path_matches(abs_posix.lstrip("/"), pattern)
    return False


# -- rules -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandRule:
    """A command prefix, by whole words, and its decision: ``CommandRule("git push", "deny")``
    matches ``git push origin`` but not ``git pushx``."""

    pattern: str
    action: Decision

    def __post_init__(self) -> None:
        _check_decision(self.action, f"CommandRule({self.pattern!r}).action")


@dataclass(frozen=True)
class PathRule:
    """A path pattern, its decision and the operations it covers (``ops``: any iterable of
    ``"read"`` / ``"write"``). ``/...`` and ``~...`` patterns match the resolved absolute path
    and everything under it; a pattern with ``/`` matches workspace-relative paths only; a
    bare one (``".env*"``) names a file or directory anywhere."""

    pattern: str
    action: Decision
    ops: frozenset[FileOp] = frozenset({"read", "write"})

    def __post_init__(self) -> None:
        _check_decision(self.action, f"PathRule({self.pattern!r}).action")
        ops = frozenset(self.ops)
        if not ops or not ops <= {"read", "write"}:
            raise UserError(
                f"PathRule({self.pattern!r}).ops must hold 'read' and/or 'write', got {ops!r}"
            )
        object.__setattr__(self, "ops", ops)


@dataclass(frozen=True)
class WorkspacePolicy:
    """What the workspace tools may do (see the module's docstring for the order of rules)."""

    write: Decision = "allow"
    """Writes inside the root. Reads inside the root are always allowed."""
    read_outside: Decision = "deny"
    """Reads outside the root (an absolute path, ``~``, ``..``, or a link leading out)."""
    write_outside: Decision = "deny"
    """Writes outside the root."""
    path_rules: tuple[PathRule, ...] = ()
    """Checked in order before the defaults; the first match decides."""
    denied_paths: tuple[str, ...] = ()
    """Patterns nothing may read or write, checked before everything else."""
    allow_shell: bool = True
    """``False``: no shell tool, and every command is denied."""
    shell_default: Decision = "ask"
    """The decision for a command no rule matches."""
    command_rules: tuple[CommandRule, ...] = ()
    """Checked in order for each simple command; the first match decides."""
    command_decider: CommandDecider | None = None
    """Asked before ``command_rules`` for each simple command (see ``CommandDecider``)."""

    def __post_init__(self) -> None:
        for name in ("write", "read_outside", "write_outside", "shell_default"):
            _check_decision(getattr(self, name), f"WorkspacePolicy.{name}")
        set_ = object.__setattr__
        set_(self, "path_rules", tuple(self.path_rules))
        set_(self, "denied_paths", tuple(self.denied_paths))
        set_(self, "command_rules", tuple(self.command_rules))
        if not self.allow_shell:  # no shell: say so in every field that speaks of one
            set_(self, "shell_default", "deny")

    # -- presets ---------------------------------------------------------------------------

    @classmethod
    def readonly(
        cls, *, denied_paths: Iterable[str] = (), path_rules: Iterable[PathRule] = ()
    ) -> WorkspacePolicy:
        """Read inside the root; nothing written anywhere, no shell."""
        preset = cls(write="deny", read_outside="deny", write_outside="deny", allow_shell=False)
        return preset._refined(denied_paths=denied_paths, path_rules=path_rules)

    @classmethod
    def coding(
        cls,
        *,
        command_rules: Iterable[CommandRule] = (),
        denied_paths: Iterable[str] = (),
        path_rules: Iterable[PathRule] = (),
        command_decider: CommandDecider | None = None,
    ) -> WorkspacePolicy:
        """Free inside the root; reads outside and shell commands ask, writes outside are
        denied."""
        preset = cls(write="allow", read_outside="ask", write_outside="deny", shell_default="ask")
        return preset._refined(denied_paths, path_rules, command_rules, command_decider)

    @classmethod
    def trusted(
        cls,
        *,
        command_rules: Iterable[CommandRule] = (),
        denied_paths: Iterable[str] = (),
        path_rules: Iterable[PathRule] = (),
        command_decider: CommandDecider | None = None,
    ) -> WorkspacePolicy:
        """Read anywhere, write the root, run commands without asking; writes outside ask."""
        preset = cls(
            write="allow", read_outside="allow", write_outside="ask", shell_default="allow"
        )
        return preset._refined(denied_paths, path_rules, command_rules, command_decider)

    def _refined(
        self,
        denied_paths: Iterable[str] = (),
        path_rules: Iterable[PathRule] = (),
        command_rules: Iterable[CommandRule] = (),
        command_decider: CommandDecider | None = None,
    ) -> WorkspacePolicy:
        """A preset's defaults with the caller's rules: the one place a preset takes them."""
        return replace(
            self,
            denied_paths=tuple(denied_paths),
            path_rules=tuple(path_rules),
            command_rules=tuple(command_rules),
            command_decider=command_decider,
        )

    # -- decisions -------------------------------------------------------------------------

    def decide_path(self, *, rel: str | None, abs_posix: str, op: FileOp) -> Decision:
        """The decision for one resolved path: ``rel`` is its workspace-relative POSIX form
        (``None`` outside the root), ``abs_posix`` its resolved absolute form."""
        ruled = self.rule_decision(rel=rel, abs_posix=abs_posix, op=op)
        if ruled is not None:
            return ruled
        if rel is not None:
            return "allow" if op == "read" else self.write
        return self.read_outside if op == "read" else self.write_outside

    def rule_decision(self, *, rel: str | None, abs_posix: str, op: FileOp) -> Decision | None:
        """What ``denied_paths`` and ``path_rules`` decide for a resolved path, or ``None``
        when neither names it (the defaults then decide)."""
        for pattern in self.denied_paths:
            if _pattern_matches(pattern, rel=rel, abs_posix=abs_posix):
                return "deny"
        for rule in self.path_rules:
            if op in rule.ops and _pattern_matches(rule.pattern, rel=rel, abs_posix=abs_posix):
                return rule.action
        return None

    def decide_command(self, command: str) -> Decision:
        """The decision for a command line from the command rules alone: each simple
        command it runs judged on its own, the most restrictive verdict winning. (The
        session also judges the paths the line names.)"""
        if not self.allow_shell:
            return "deny"
        return self._decide_line(command, depth=0)

    def _decide_line(self, command: str, *, depth: int) -> Decision:
        if depth > _MAX_NESTING:
            return "deny"
        segments = plain_segments(command)
        nested = nested_segments(command)
        if nested:
            segments += [s for s in nested if s not in segments]
        if not segments:
            return self.shell_default
        result: Decision = "allow"
        for segment in segments:
            result = merge_decisions(result, self._decide_segment(segment, depth))
            if result == "deny":
                break
        return result

    def _decide_segment(self, segment: str, depth: int) -> Decision:
        verdict = self._verdict(segment, segment.split())
        words = command_words(segment)
        if words:
            verdict = merge_decisions(verdict, self._verdict(" ".join(words), words))
        for inner in inner_commands(words):
            verdict = merge_decisions(verdict, self._decide_line(inner, depth=depth + 1))
        return verdict

    def _verdict(self, segment: str, words: list[str]) -> Decision:
        if self.command_decider is not None:
            said = self.command_decider(segment)
            if said in _DECISIONS:
                return said  # type: ignore[return-value]
        for rule in self.command_rules:
            wanted = rule.pattern.split()
            if words[: len(wanted)] == wanted:
                return rule.action
        return self.shell_default
