"""``Skills``: the plugin that puts a skill catalog's index in the system prompt and gives the
model ``load_skill`` and ``read_skill_file``."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ...errors import UserError
from ...run_context import RunContext
from ..base import PluginInstance
from .catalog import SkillCatalog, SkillFilter
from .model import SkillMetadata
from .source import DirectorySkillSource, SkillSource

__all__ = ["Skills"]


def _catalog(
    sources: tuple[Any, ...],
    usage_rules: str | None,
    filter: SkillFilter | Callable[[SkillMetadata], bool] | None,
) -> SkillCatalog:
    if not sources:
        raise UserError(
            "Skills() needs a skills directory, a SkillSource or a SkillCatalog",
            hint="Skills('./skills'), or Skills(*default_skill_dirs()) for ./.agents/skills",
        )
    if len(sources) == 1 and isinstance(sources[0], SkillCatalog):
        if usage_rules is not None or filter is not None:
            raise UserError(
                "Skills(catalog, usage_rules=..., filter=...): a prebuilt catalog carries "
                "its own usage_rules and filter",
                hint="pass them to SkillCatalog(...) instead",
            )
        return sources[0]
    if all(isinstance(s, str | os.PathLike) for s in sources):
        source: SkillSource = DirectorySkillSource(*sources)
    elif len(sources) == 1 and isinstance(sources[0], SkillSource):
        source = sources[0]
    else:
        raise UserError(
            "Skills() takes directories, or one SkillSource or SkillCatalog, not a mix",
            hint="wrap several sources in a SkillSource of your own",
        )
    return SkillCatalog(source, usage_rules=usage_rules, filter=filter)


class Skills:
    """Skills from directories (``Skills("./skills", "./team-skills")``), a ``SkillSource``
    or a ``SkillCatalog``. Each run shows the current index; ``load_skill`` reads the source
    afresh, so a skill added mid-run can be loaded at once."""

    def __init__(
        self,
        *sources: str | os.PathLike[str] | SkillSource | SkillCatalog,
        usage_rules: str | None = None,
        filter: SkillFilter | Callable[[SkillMetadata], bool] | None = None,
        name: str = "skills",
    ) -> None:
        self.catalog = _catalog(sources, usage_rules, filter)
        self.name = name

    def __repr__(self) -> str:
        return f"Skills({self.catalog.source!r})"

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        index = await self.catalog.instructions()
        return PluginInstance(tools=self.catalog.tools(), instructions=index or None)
