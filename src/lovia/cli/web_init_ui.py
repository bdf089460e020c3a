"""``lovia web init-ui [DIR]``: the starter files for customising the chat page, for
``ChatUI(assets=DIR, styles=["theme.css"], scripts=["extension.js"])`` (what they hold:
``lovia.web.scaffold``). Existing files are kept unless ``--force``."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_init_ui"]


def run_init_ui(args: argparse.Namespace) -> int:
    from ..web.scaffold import write_starters  # here: the CLI loads no lovia.web at start

    for path in write_starters(args.dir, force=args.force):
        print(f"lovia web init-ui: wrote {path}")
    print(
        f'use them with create_app(agent, ui=ChatUI(assets="{args.dir}", '
        'styles=["theme.css"], scripts=["extension.js"]))'
    )
    return 0


def add_init_ui(parser: argparse.ArgumentParser) -> None:
    """``init-ui`` as a command of ``lovia web``."""
    commands: Any = parser.add_subparsers(dest="web_command", metavar="{init-ui}")
    init = commands.add_parser(
        "init-ui",
        help="write starter files for customising the page (index.html, theme.css, extension.js)",
        description="Write index.html (the page's template: it extends the bundled page, its "
        "blocks commented out), theme.css (every colour token of the page with its default, "
        "commented out) and extension.js (an empty module) into DIR, for ChatUI(assets=DIR). "
        "Existing files are kept unless --force.",
    )
    init.add_argument("dir", nargs="?", default="ui", metavar="DIR", help="default: ./ui")
    init.add_argument("--force", action="store_true", help="replace files that exist")
    init.set_defaults(handler=run_init_ui)
