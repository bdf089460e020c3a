"""What a skill is: ``SkillMetadata`` (the index line), ``Skill`` (its body and files), and the
errors of the skill layer."""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import LoviaError

__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "Skill",
    "SkillMetadata",
    "SkillNotFoundError",
    "SkillsError",
    "check_description",
    "check_skill_name",
]

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_FILE_BYTES = 8 * 1024 * 1024  # a skill file is reference text, not a data set

_NAME = re.compile(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*")


class SkillsError(LoviaError):
    """A skill could not be listed, loaded or read. ``skill_name`` and ``path`` say which;
    the message and its ``hint`` read as one line, as the skill tools hand it to the model."""

    def __init__(
        self,
        message: str,
        *,
        skill_name: str | None = None,
        path: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.skill_name = skill_name
        self.path = path

    def __str__(self) -> str:
        return f"{self.message}  {self.hint}" if self.hint else self.message


class SkillNotFoundError(SkillsError):
    """No visible skill has this name; ``available`` lists the names that do exist."""

    def __init__(self, name: str, *, available: Sequence[str] = ()) -> None:
        self.available = list(available)
        listed = ", ".join(self.available) if self.available else "(none)"
        super().__init__(f"Unknown skill: {name!r}.", skill_name=name, hint=f"Available: {listed}")


def check_skill_name(name: Any) -> str:
    """``name`` if it is a valid skill name (letters and digits in segments joined by single
    ``-`` or ``_``, at most 64 characters), else ``SkillsError``."""
    if not isinstance(name, str):
        raise SkillsError(f"A skill name must be a string, not {type(name).__name__}.")
    if not name:
        raise SkillsError("A skill name must not be empty.")
    if "/" in name or "\\" in name or ".." in name:
        raise SkillsError(
            f"Skill name {name!r} contains a path separator or '..'.", skill_name=name
        )
    if len(name) > MAX_NAME_CHARS:
        raise SkillsError(
            f"Skill name is too long ({len(name)} > {MAX_NAME_CHARS} characters).",
            skill_name=name[:MAX_NAME_CHARS],
        )
    if not _NAME.fullmatch(name):
        raise SkillsError(
            f"Skill name {name!r} is invalid.",
            skill_name=name,
            hint="Use letters and digits, joined by single '-' or '_' (e.g. 'refund-policy').",
        )
    return name


def check_description(name: str, description: Any) -> str:
    """``description`` stripped, if it is a non-empty string of at most 1024 characters."""
    if not isinstance(description, str):
        raise SkillsError(
            f"Skill {name!r}: the description must be a string, not {type(description).__name__}.",
            skill_name=name,
            hint='Quote it in the frontmatter: description: "..."',
        )
    text = description.strip()
    if not text:
        raise SkillsError(
            f"Skill {name!r} has an empty description.",
            skill_name=name,
            hint="Say in the frontmatter when the skill should be used.",
        )
    if len(text) > MAX_DESCRIPTION_CHARS:
        raise SkillsError(
            f"Skill {name!r}: the description is too long "
            f"({len(text)} > {MAX_DESCRIPTION_CHARS} characters).",
            skill_name=name,
        )
    return text


@dataclass(frozen=True)
class SkillMetadata:
    """A skill as the index shows it: ``name``, ``description`` and any ``extra``
    frontmatter (tags, owner, version, ...)."""

    name: str
    description: str
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Skill:
    """A loaded skill: its metadata, its ``body`` (SKILL.md after the frontmatter) and, for a
    skill on disk, the ``path`` of its directory."""

    name: str
    description: str
    body: str
    path: Path | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def metadata(self) -> SkillMetadata:
        return SkillMetadata(name=self.name, description=self.description, extra=self.extra)

    def read_file(self, relpath: str) -> str:
        """The text of a file inside the skill's directory. ``SkillsError`` when the path
        leaves the directory (symlinks are followed first), is not a regular file, or is not
        UTF-8 text."""
        if self.path is None:
            raise SkillsError(
                f"Skill {self.name!r} has no on-disk path, so it has no files to read.",
                skill_name=self.name,
            )
        root = self.path.resolve()
        target = (root / relpath).resolve()
        if not target.is_relative_to(root):
            raise SkillsError(
                f"Path {relpath!r} escapes skill directory.",
                skill_name=self.name,
                path=str(target),
                hint="Use a relative path inside the skill directory.",
            )
        try:
            info = target.stat()
        except OSError:
            raise SkillsError(
                f"File {relpath!r} not found in skill {self.name!r}.",
                skill_name=self.name,
                path=str(target),
            ) from None
        if not stat.S_ISREG(info.st_mode):
            raise SkillsError(
                f"{relpath!r} in skill {self.name!r} is not a regular file.",
                skill_name=self.name,
                path=str(target),
            )
        if info.st_size > MAX_FILE_BYTES:
            raise SkillsError(
                f"{relpath!r} in skill {self.name!r} is too large to read ({info.st_size} bytes).",
                skill_name=self.name,
                path=str(target),
            )
        try:
            return target.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise SkillsError(
                f"{relpath!r} in skill {self.name!r} is not UTF-8 text.",
                skill_name=self.name,
                path=str(target),
            ) from None
        except OSError as exc:
            raise SkillsError(
                f"{relpath!r} in skill {self.name!r} cannot be read: {exc.strerror}.",
                skill_name=self.name,
                path=str(target),
            ) from None
