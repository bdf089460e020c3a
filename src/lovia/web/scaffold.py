"""The chat page's starter files (``lovia web init-ui``; 0.9.119's ``lovia.web.scaffold``).

``theme.css`` lists every colour token of the page with its default, for the light and the
dark theme, taken from the page's own stylesheet (so it lists what this lovia's page has);
``extension.js`` is an empty module the page loads after its own scripts; ``index.html``
extends the bundled page (``lovia/index.html``) and names each of its template blocks.
Everything in them is commented out, so the files alone change nothing. ``init_ui``
refuses to replace files (``FileExistsError``); the command replaces them with ``--force``."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from ..errors import UserError

__all__ = ["StartersExist", "init_ui", "starter_files", "write_starters"]

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


class StartersExist(UserError):
    """A starter file is there already: nothing was written. ``lovia web init-ui`` exits
    1 for it, as 0.9.119's does (2 for the other errors, as every lovia command)."""

    exit_status = 1


def write_starters(folder: str | Path, *, force: bool = False) -> list[Path]:
    """Write the starter files into ``folder`` (made when missing) and return their paths;
    ``UserError`` and nothing written when one of them is there already, unless ``force``."""
    name = str(folder)
    where = Path(folder)
    files = starter_files(name)
    if where.exists() and not where.is_dir():
        raise UserError(f"{name!r} is a file", hint="name a folder for the page's files")
    there = [n for n in files if (where / n).exists()]
    if there and not force:
        raise StartersExist(
            f"refusing to overwrite {', '.join(there)} in {name}: nothing written",
            hint="keep your files, or pass --force to replace them with the starters",
        )
    where.mkdir(parents=True, exist_ok=True)
    for n, text in files.items():
        (where / n).write_text(text, encoding="utf-8")
    return [where / n for n in files]


def init_ui(directory: str | Path) -> list[Path]:
    """Write ``index.html``, ``theme.css`` and ``extension.js`` into ``directory`` for
    ``ChatUI(assets=directory, styles=["theme.css"], scripts=["extension.js"])``."""
    try:
        return write_starters(directory)
    except StartersExist as exc:
        raise FileExistsError(str(exc)) from exc
