"""Skills: instruction packets the model discovers from an index and loads when it needs them.

A skill is a folder with a ``SKILL.md`` (YAML frontmatter: ``name``, ``description``, any
extra keys; then the instructions) and optional ``references/``, ``scripts/``, ``assets/``.
"""

from __future__ import annotations

from .catalog import SkillCatalog, SkillFilter
from .model import Skill, SkillMetadata, SkillNotFoundError, SkillsError
from .plugin import Skills
from .source import (
    DEFAULT_SKILLS_DIR,
    USER_SKILLS_DIR,
    DirectorySkillSource,
    SkillSource,
    default_skill_dirs,
)

__all__ = [
    "DEFAULT_SKILLS_DIR",
    "USER_SKILLS_DIR",
    "DirectorySkillSource",
    "Skill",
    "SkillCatalog",
    "SkillFilter",
    "SkillMetadata",
    "SkillNotFoundError",
    "SkillSource",
    "Skills",
    "SkillsError",
    "default_skill_dirs",
]
