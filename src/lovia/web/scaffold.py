"""The chat page's starter files (``lovia web init-ui``; 0.9.119's ``lovia.web.scaffold``).

``theme.css`` lists every colour token of the page with its default, for the light and the
dark theme, taken from the page's own stylesheet (so it lists what this lovia's page has);
``extension.js`` is a module the page imports before it starts, whose first lines point
an editor at this install's ``lovia.d.ts`` (the types of ``window.lovia``); ``index.html``
extends the bundled page (``lovia/index.html``) and names each of its template blocks.
Everything in them is commented out, so the files alone change nothing. ``init_ui``
refuses to replace files (``FileExistsError``); the command replaces them with ``--force``."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from ..errors import UserError

__all__ = ["StartersExist", "init_ui", "starter_files", "types_path", "write_starters"]

_BLOCK = re.compile(
    r"(?P<selector>[^{}]*\[data-theme=\"(?P<theme>light|dark)\"\])\s*\{(?P<body>[^}]*)\}"
)
_TOKEN = re.compile(r"(--[a-z0-9-]+)\s*:\s*([^;]+);")

_SCRIPT = """\
// @ts-check
/// <reference path="{types}" />
// An extension module of the chat page: the page imports it before it starts
//   create_app(agent, ui=ChatUI(assets="{folder}", scripts=["extension.js"]))
// and it reaches the page through window.lovia, typed for your editor by the file named
// above (this lovia's lovia.d.ts). It runs under the page's Content-Security-Policy: code
// from this folder (served at ui/) may run, inline scripts and other sites' scripts may not.

const {{ lovia }} = window;

// A one-line summary on a tool's cards:
// lovia.registerToolView("order_status", {{
//   summary: (tool) => (tool.status === "done" ? "Looked up the order" : "Looking up the order"),
// }});

// React to the chat:
// lovia.on("run-end", ({{ status }}) => {{
//   if (status === "error") lovia.toast("The answer failed", {{ type: "error" }});
// }});

// A button under each answer:
// lovia.registerMessageAction("acme-flag", {{ label: "Flag", run: (msg) => console.log(msg) }});
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
    themes = {b["theme"]: _TOKEN.findall(b["body"]) for b in _BLOCK.finditer(sheet)}
    coloured = {name for name, _ in themes.get("dark", [])}  # what each theme sets anew
    shared = [(n, v) for n, v in themes.get("light", []) if n not in coloured]
    lines = [
        "/* The chat page's design tokens with their defaults, each commented out: uncomment",
        f'   the ones you change. Served with ChatUI(assets="{folder}", styles=["theme.css"]);',
        "   the page's own rules sit in the cascade layer lovia, so a rule here wins. */",
        "",
        "/* Both themes. */",
        ":root {",
        *[f"  /* {name}: {value.strip()}; */" for name, value in shared],
        "}",
    ]
    for theme in ("light", "dark"):
        own = [(n, v) for n, v in themes.get(theme, []) if n in coloured]
        lines += ["", f"/* Colours of the {theme} theme. */", f'[data-theme="{theme}"] {{']
        lines += [f"  /* {name}: {value.strip()}; */" for name, value in own]
        lines.append("}")
    return "\n".join(lines) + "\n"


def types_path() -> str:
    """Where this install keeps ``lovia.d.ts``, the types of ``window.lovia``."""
    return str(resources.files("lovia.web") / "static" / "lovia.d.ts")


def starter_files(folder: str) -> dict[str, str]:
    """The files ``init-ui`` writes, by name."""
    return {
        "index.html": _TEMPLATE.format(folder=folder),
        "theme.css": _theme_css(folder),
        "extension.js": _SCRIPT.format(folder=folder, types=types_path()),
    }


class StartersExist(UserError):
    """A starter file (or a file named as the folder) is there already: nothing was written.
    ``lovia web init-ui`` exits 1 for it, as 0.9.119's does (2 for the other errors, as every
    lovia command)."""

    exit_status = 1


def write_starters(folder: str | Path, *, force: bool = False) -> list[Path]:
    """Write the starter files into ``folder`` (made when missing) and return their paths;
    ``UserError`` and nothing written when one of them is there already, unless ``force``."""
    name = str(folder)
    where = Path(folder)
    files = starter_files(name)
    if where.exists() and not where.is_dir():
        raise StartersExist(f"{name!r} is a file", hint="name a folder for the page's files")
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
