"""Where skills come from: the ``SkillSource`` protocol and ``DirectorySkillSource``, which
reads ``<root>/<skill>/SKILL.md`` afresh on every listing and every load."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ._yaml import FrontmatterError, parse_mapping
from .model import (
    Skill,
    SkillMetadata,
    SkillNotFoundError,
    SkillsError,
    check_description,
    check_skill_name,
)

__all__ = [
    "DEFAULT_SKILLS_DIR",
    "USER_SKILLS_DIR",
    "DirectorySkillSource",
    "SkillSource",
    "default_skill_dirs",
    "split_frontmatter",
]

log = logging.getLogger("lovia.plugins.skills")

SKILL_FILE = "SKILL.md"
DEFAULT_SKILLS_DIR = ".agents/skills"
"""The skills folder of a project (relative to its root), as ``lovia web`` looks for it."""
USER_SKILLS_DIR = "~/.agents/skills"
"""The user's own skills folder."""

_OPENING = re.compile(r"---[ \t]*")


@runtime_checkable
class SkillSource(Protocol):
    """A store of skills. Both methods return what is true now (there is no cache to refresh):
    ``list_skills`` every visible skill's metadata, ``load_skill`` one skill, raising
    ``SkillNotFoundError`` for a name it does not have."""

    async def list_skills(self) -> list[SkillMetadata]: ...

    async def load_skill(self, name: str) -> Skill: ...


def default_skill_dirs(project_root: str | os.PathLike[str] | None = None) -> list[Path]:
    """The conventional skill folders that exist: ``<project_root>/.agents/skills`` (the
    current directory when none is given), then ``~/.agents/skills``."""
    base = Path(project_root) if project_root is not None else Path.cwd()
    found = [base / DEFAULT_SKILLS_DIR, Path(USER_SKILLS_DIR).expanduser()]
    return [p.absolute() for p in found if p.is_dir()]


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """``(metadata, body)`` of a SKILL.md text. Frontmatter is a ``---`` line (the first
    non-blank one, at column 0) and the next column-0 ``---`` line; without both, or when
    what lies between is not readable YAML, the metadata is ``{}``."""
    text = text.removeprefix("\ufeff")
    lines = text.replace("\r\n", "\n").split("\n")
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start >= len(lines) or not _OPENING.fullmatch(lines[start]):
        return {}, text
    for end in range(start + 1, len(lines)):
        if lines[end].rstrip() == "---":
            break
    else:
        return {}, text
    body = "\n".join(lines[end + 1 :]).lstrip("\n")
    try:
        meta = parse_mapping("\n".join(lines[start + 1 : end]))
    except (FrontmatterError, RecursionError):
        return {}, body
    return meta, body


def _skill_from(directory: Path, text: str) -> Skill:
    meta, body = split_frontmatter(text)
    name = check_skill_name(meta.get("name", directory.name))
    description = check_description(name, meta.get("description"))
    extra = {k: v for k, v in meta.items() if k not in ("name", "description")}
    return Skill(name=name, description=description, body=body, path=directory, extra=extra)


class DirectorySkillSource:
    """Skills in folders: each ``<root>/<name>/SKILL.md`` is one skill. Several roots are
    read in order; on a duplicate name the first wins. Nothing is cached: a skill added,
    edited or removed on disk counts from the next listing or load."""

    def __init__(self, *roots: str | os.PathLike[str]) -> None:
        self.roots = [Path(r).expanduser().absolute() for r in roots]
        self._warned_missing: set[Path] = set()
        self._warned_twins: set[Path] = set()  # each shadowed folder is reported once

    def __repr__(self) -> str:
        return f"DirectorySkillSource({', '.join(repr(str(r)) for r in self.roots)})"

    async def list_skills(self) -> list[SkillMetadata]:
        skills = await asyncio.to_thread(self._scan)
        return [s.metadata for s in skills.values()]

    async def load_skill(self, name: str) -> Skill:
        skills = await asyncio.to_thread(self._scan)
        found = skills.get(name)
        if found is None:
            raise SkillNotFoundError(name, available=sorted(skills))
        return found

    def _scan(self) -> dict[str, Skill]:
        found: dict[str, Skill] = {}
        for root in self.roots:
            if not root.is_dir():
                if root not in self._warned_missing:
                    self._warned_missing.add(root)
                    log.warning("skill.root_missing: %s is not a directory; skipped", root)
                continue
            self._warned_missing.discard(root)
            for directory in sorted(root.iterdir()):
                skill = self._read(directory)
                if skill is None:
                    continue
                if skill.name in found:
                    if directory in self._warned_twins:
                        continue
                    self._warned_twins.add(directory)
                    log.warning(
                        "skill.duplicate: %r in %s is already defined in %s; skipped",
                        skill.name,
                        directory,
                        found[skill.name].path,
                    )
                    continue
                found[skill.name] = skill
        return found

    def _read(self, directory: Path) -> Skill | None:
        manifest = directory / SKILL_FILE
        try:
            if not directory.is_dir() or not manifest.is_file():
                return None
            text = manifest.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("skill.unreadable: %s: %s; skipped", manifest, exc)
            return None
        try:
            return _skill_from(directory, text)
        except SkillsError as exc:
            log.warning("skill.invalid: %s: %s; skipped", manifest, exc)
            return None
