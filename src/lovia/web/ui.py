"""``ChatUI``: options of the bundled chat page (``create_app(ui=ChatUI(...))``), and
``SURFACE_NOTE``, what to tell a model about the page its answers appear on."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError

__all__ = ["BUILTIN_LANGS", "SURFACE_NOTE", "ChatUI"]

BUILTIN_LANGS = ("en", "zh")
"""The languages the page has its own wording in."""
_LANG = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")  # a BCP 47 tag: ja, pt-BR, zh-Hant


def _on_app_or_web(ref: str) -> bool:
    """Whether ``ref`` is a path on the app (``/x``) or a URL, not a file in ``assets``."""
    return ref.startswith(("/", "http://", "https://", "data:"))


SURFACE_NOTE = (
    "Your answers are shown on a web page that renders Markdown (GitHub flavour): use "
    "headings, lists, tables, code blocks and links where they help, and show an image "
    "with ![description](url) rather than describing it."
)
"""A sentence for an agent's instructions: the model writes for the page it is read on."""


@dataclass(frozen=True)
class ChatUI:
    """How the bundled page looks: the blank chat's ``empty_title``, ``empty_description``
    and clickable ``empty_examples``; ``login_url`` (where a signed-out user goes under
    ``auth=``; ``{next}`` is replaced by the page's path); ``assets``, a folder of your own
    files served at ``<app>/ui/``; ``scripts``, ``styles``, ``logo`` and ``favicon`` (each a
    file in ``assets``, a path on the app, or a URL); ``messages``, UI wording by language;
    ``default_lang``."""

    empty_title: str | None = None
    empty_description: str | Sequence[str] | None = None
    empty_examples: Sequence[str] = ()
    login_url: str | None = None
    assets: str | Path | None = None
    scripts: Sequence[str] = ()
    styles: Sequence[str] = ()
    logo: str | None = None
    favicon: str | None = None
    # 0.9.119's order, for ChatUI(...) called with its arguments by position
    default_lang: str | None = None
    messages: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.assets is not None and not Path(self.assets).expanduser().is_dir():
            raise UserError(
                f"assets directory not found: {self.assets}",
                hint="pass ChatUI(assets=...) a folder that exists (relative to the current "
                "directory, or absolute)",
            )
        for name in ("scripts", "styles", "empty_examples"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))
        for name in ("scripts", "styles", "logo", "favicon"):
            value = getattr(self, name)
            for item in (value,) if isinstance(value, str) else value or ():
                if self.assets is None and not _on_app_or_web(item):
                    raise UserError(
                        f"ChatUI {name} {item!r} names a file in assets, and no assets "
                        "folder is given",
                        hint="pass ChatUI(assets=folder), or name a path on the app "
                        '("/x.js") or a URL',
                    )
        for lang, strings in self.messages.items():
            if not isinstance(lang, str) or not _LANG.match(lang):
                raise UserError(
                    f"ChatUI messages: invalid language tag {lang!r}",
                    hint='use a BCP 47 tag such as "ja" or "pt-BR"',
                )
            if not isinstance(strings, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in strings.items()
            ):
                raise UserError(
                    f"ChatUI messages[{lang!r}] must map message keys to strings",
                    hint='e.g. messages={"ja": {"composer.placeholder": "..."}}',
                )
        known = (*BUILTIN_LANGS, *self.messages)
        if self.default_lang is not None and self.default_lang not in known:
            raise UserError(
                f"ChatUI default_lang {self.default_lang!r} has no strings",
                hint=f"use one of {', '.join(known)}, or add its strings to messages",
            )
