"""``lovia web init-ui [DIR]``: the starter files for customising the chat page, for
``ChatUI(assets=DIR, styles=["theme.css"], scripts=["extension.js"])``.

``theme.css`` lists every colour token of the page with its default, for the light and the
dark theme, taken from the page's own stylesheet (so it lists what this lovia's page has);
``extension.js`` is an empty module the page loads after its own scripts; ``index.html``
extends the bundled page (``lovia/index.html``) and names each of its template blocks.
Everything in them is commented out, so the files alone change nothing. Existing files
are kept unless ``--force``."""

from __future__ import annotations

import argparse
import re
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import UserError

__all__ = ["add_init_ui", "starter_files"]

_BLOCK = re.compile(
    r"(?P<selector>[^{}]*\[data-theme=\"(?P<theme>light|dark)\"\])\s*\{(?P<body>[^}]*)\}"
)
_TOKEN = re.compile(r"(--[a-z0-9-]+)\s*:\s*([^;]+);")

_SCRIPT = """\
// Loaded by the chat page as a module, after its own scripts:
//   create_app(agent, ui=ChatUI(assets="{folder}", scripts=["extension.js"]))
// It runs in the page under its Content-Security-Policy: code from this folder (served at
// ui/) may run, inline scripts and other sites' scripts may not.
//
// document.addEventListener("DOMContentLoaded", () => {{
//   document.title = "Acme assistant";
// }});
"""

_TEMPLATE = """\
{{% extends "lovia/index.html" %}}
{{# The chat page, read from ChatUI(assets="{folder}") in place of the bundled one. It extends
   the bundled page: fill only the blocks you need (uncomment one and edit it). A block you
   fill replaces the page's own content there; {{{{ super() }}}} keeps it. A file of this folder
   is at {{{{ url_for('ui-assets', path='logo.svg').path }}}}. Inline scripts here are allowed
   by their hashes in the page's Content-Security-Policy.

{{% block head %}}<meta name="description" content="Acme assistant">{{% endblock %}}
{{% block sidebar_header %}}<h1 id="page-title">Acme</h1>{{% endblock %}}
{{% block sidebar_nav %}}<a href="/help">Help center</a>{{% endblock %}}
{{% block sidebar_footer %}}<a href="/logout">Sign out</a>{{% endblock %}}
{{% block topbar_actions %}}<button type="button" id="acme-mode">Mode</button>{{% endblock %}}
{{% block composer_actions %}}<select id="acme-kb"></select>{{% endblock %}}
{{% block welcome %}}{{{{ super() }}}}<p>Maintenance tonight at 22:00.</p>{{% endblock %}}
{{% block body_end %}}<script type="module" src="ui/acme.js"></script>{{% endblock %}}
#}}
"""


def _theme_css(folder: str) -> str:
    sheet = (resources.files("lovia") / "web" / "static" / "style.css").read_text("utf-8")
    lines = [
        "/* The chat page's colour tokens with their defaults. Uncomment and change what you",
        f'   want; served with ChatUI(assets="{folder}", styles=["theme.css"]), a rule here',
        "   wins over the page's own. */",
    ]
    for block in _BLOCK.finditer(sheet):
        theme = block.group("theme")
        selector = ':root, [data-theme="light"]' if theme == "light" else '[data-theme="dark"]'
        lines += ["", f"/* {theme} theme */", f"/* {selector} {{"]
        lines += [f"  {name}: {value.strip()};" for name, value in _TOKEN.findall(block["body"])]
        lines.append("} */")
    return "\n".join(lines) + "\n"


def starter_files(folder: str) -> dict[str, str]:
    """The files ``init-ui`` writes, by name."""
    return {
        "index.html": _TEMPLATE.format(folder=folder),
        "theme.css": _theme_css(folder),
        "extension.js": _SCRIPT.format(folder=folder),
    }


def run_init_ui(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    files = starter_files(args.dir)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{args.dir!r} is a file", hint="name a folder for the page's files")
    there = [name for name in files if (folder / name).exists()]
    if there and not args.force:
        raise UserError(
            f"{', '.join(there)} already in {args.dir}: nothing written",
            hint="keep your files, or pass --force to replace them with the starters",
        )
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        print(f"lovia web init-ui: wrote {folder / name}")
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
